#include "state/checkpoint_shards.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <set>

#include "cohort/cohort.h"
#include "state/checkpoint_format.h"
#include "state/state_impl.h"

namespace cohort::elastic::detail {
namespace {

bool overlaps(ShardRange a, ShardRange b) {
  return a.begin < b.end && b.begin < a.end;
}

// Parses one value's record of rank `rank`'s part and checks it against the tracked value.
std::span<const std::byte> read_value(wire::Reader& in, const ShardedValue& v, int rank, int size) {
  std::string name = in.str();
  std::string type = in.str();
  uint64_t length = in.u64();
  ShardRange range;
  range.begin = in.u64();
  range.end = in.u64();
  if (name != v.name() || type != cohort::to_string(v.dtype()) || length != v.length()) {
    throw wire::MalformedBytes("it holds '" + name + "' (" + type + ", " + std::to_string(length) +
                               " elements) where '" + v.name() + "' was expected");
  }
  if (range != shard_range(length, rank, size)) {
    throw wire::MalformedBytes("'" + name + "' holds elements [" + std::to_string(range.begin) +
                               ", " + std::to_string(range.end) + "), not rank " +
                               std::to_string(rank) + "'s range");
  }
  return in.raw(range.size() * element_size(v.dtype()));
}

// The ranges of every sharded value in rank `rank`'s part, checked against the checkpoint.
std::vector<std::span<const std::byte>> parse_part(const StateImpl& s,
                                                   std::span<const std::byte> payload,
                                                   uint64_t sequence, uint64_t commit_count,
                                                   int rank, int size) {
  wire::Reader in(payload);
  uint64_t got_sequence = in.u64();
  uint64_t got_commit = in.u64();
  uint64_t got_rank = in.u64();
  uint64_t got_size = in.u64();
  if (got_sequence != sequence || got_commit != commit_count ||
      got_rank != static_cast<uint64_t>(rank) || got_size != static_cast<uint64_t>(size)) {
    throw wire::MalformedBytes("it is the part of rank " + std::to_string(got_rank) + " of " +
                               std::to_string(got_size) + " of checkpoint " +
                               std::to_string(got_sequence) + " (commit " +
                               std::to_string(got_commit) + ")");
  }
  if (in.u64() != s.sharded.size()) throw wire::MalformedBytes("it holds other sharded values");
  std::vector<std::span<const std::byte>> out;
  for (const ShardedValue& v : s.sharded) out.push_back(read_value(in, v, rank, size));
  if (!in.done()) throw wire::MalformedBytes("bytes left over after the last value");
  return out;
}

}  // namespace

std::string part_name(uint64_t sequence, int rank, int size) {
  char name[96];
  std::snprintf(name, sizeof name, "ckpt-%020" PRIu64 ".rank-%d-of-%d.part", sequence, rank, size);
  return name;
}

std::optional<uint64_t> part_sequence_of(const std::string& name) {
  uint64_t sequence = 0;
  int rank = 0, size = 0, end = 0;
  // Parsed, then written again: only a name part_name() writes comes back the same.
  if (std::sscanf(name.c_str(), "ckpt-%20" SCNu64 ".rank-%d-of-%d.part%n", &sequence, &rank, &size,
                  &end) != 3 ||
      static_cast<size_t>(end) != name.size() || name != part_name(sequence, rank, size)) {
    return std::nullopt;
  }
  return sequence;
}

void write_part(const StateImpl& s, const files::Directory& dir, uint64_t sequence) {
  int rank = cohort::rank(), size = cohort::size();
  DurableFile file(dir, part_name(sequence, rank, size), nullptr);
  CheckpointWriter writer(file);
  wire::Writer& r = writer.records();
  r.u64(sequence);
  r.u64(s.commit_count);
  r.u64(static_cast<uint64_t>(rank));
  r.u64(static_cast<uint64_t>(size));
  r.u64(s.sharded.size());
  for (const ShardedValue& v : s.sharded) {
    auto own = v.own_copy(s.commit_count);
    if (!own || own->first != shard_range(v.length(), rank, size)) {
      throw InvalidArgument("save: sharded value '" + v.name() +
                            "' has no copy of the last commit in this world on rank " +
                            std::to_string(rank) + ": commit() first");
    }
    r.str(v.name());
    r.str(cohort::to_string(v.dtype()));
    r.u64(v.length());
    r.u64(own->first.begin);
    r.u64(own->first.end);
    writer.raw(own->second);
  }
  writer.finish();
}

StagedShards read_parts(const StateImpl& s, const files::Directory& dir, uint64_t sequence,
                        uint64_t commit_count, int saved_size) {
  int rank = cohort::rank(), size = cohort::size();
  StagedShards staged;
  std::set<int> needed;  // the saved ranks whose ranges overlap this rank's new ones
  for (const ShardedValue& v : s.sharded) {
    ShardRange mine = shard_range(v.length(), rank, size);
    staged.ranges.push_back(mine);
    staged.bytes.emplace_back(mine.size() * element_size(v.dtype()));
    for (int r = 0; r < saved_size; ++r) {
      if (overlaps(shard_range(v.length(), r, saved_size), mine)) needed.insert(r);
    }
  }
  for (int from : needed) {
    std::string name = part_name(sequence, from, saved_size);
    std::vector<std::byte> payload;
    std::vector<std::span<const std::byte>> held;
    try {
      payload = read_verified_payload(dir, name);
      held = parse_part(s, payload, sequence, commit_count, from, saved_size);
    } catch (const Error& e) {  // missing, damaged, foreign, not a regular file, unreadable
      throw DamagedCheckpoint("part " + dir.path_of(name) + ": " + e.what());
    }
    for (size_t i = 0; i < s.sharded.size(); ++i) {
      const ShardedValue& v = s.sharded[i];
      ShardRange theirs = shard_range(v.length(), from, saved_size), mine = staged.ranges[i];
      if (!overlaps(theirs, mine)) continue;
      uint64_t begin = std::max(theirs.begin, mine.begin), end = std::min(theirs.end, mine.end);
      size_t element = element_size(v.dtype());
      std::memcpy(staged.bytes[i].data() + (begin - mine.begin) * element,
                  held[i].data() + (begin - theirs.begin) * element, (end - begin) * element);
    }
  }
  return staged;
}

void apply_parts(StateImpl& s, const StagedShards& staged) {
  for (size_t i = 0; i < s.sharded.size(); ++i)
    s.sharded[i].load(staged.ranges[i], staged.bytes[i]);
}

}  // namespace cohort::elastic::detail
