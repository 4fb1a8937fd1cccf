// save() and load_latest(): rank 0 does the file work, the outcome is broadcast so every rank
// returns or throws alike, and a load ends with a sync so every rank holds the loaded state.
// Sharded values add a step on every rank: its part is written before rank 0's file, and read
// back (its range in the current world) before anything is applied (state/checkpoint_shards.h).
#include "cohort/elastic/checkpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <set>

#include "base/file_kind.h"
#include "cohort/cohort.h"
#include "state/agreement.h"
#include "state/checkpoint_directory.h"
#include "state/checkpoint_format.h"
#include "state/checkpoint_shards.h"
#include "state/state_impl.h"

namespace cohort::elastic {
namespace detail {
namespace {

namespace fs = std::filesystem;
using files::Directory;

void write_payload(const StateImpl& s, CheckpointWriter& w, uint64_t sequence) {
  wire::Writer& r = w.records();
  r.u64(sequence);
  r.u64(s.commit_count);
  r.u64(s.entries.size());
  for (const Entry& e : s.entries) {
    r.str(e.name);
    r.u8(static_cast<uint8_t>(e.kind));
    if (e.kind == ValueKind::kBuffer) {
      const BufferValue& b = s.buffers[e.index];
      r.str(cohort::to_string(b.dtype()));
      r.u64(b.num_bytes());
      w.raw(b.snapshot());
    } else if (e.kind == ValueKind::kObject) {
      r.str(s.objects[e.index].type_name());
      r.str(s.objects[e.index].snapshot());
    } else if (e.kind == ValueKind::kSharded) {  // its bytes are in the parts
      r.str(cohort::to_string(s.sharded[e.index].dtype()));
      r.u64(s.sharded[e.index].length());
      r.u64(static_cast<uint64_t>(cohort::size()));
    } else {
      r.str("");
      s.sampler(e.index).write_committed_header(r);
      s.sampler(e.index).write_committed_words(
          [&](std::span<const uint64_t> words) { w.raw(std::as_bytes(words)); });
    }
  }
}

void check_saveable(const StateImpl& s, const CheckpointOptions& options) {
  if (options.keep_last < 1) throw InvalidArgument("save: keep_last must be at least 1");
  if (!s.has_commit) throw InvalidArgument("save: there is no commit to save: commit() first");
  for (const BufferValue& b : s.buffers) {
    if (!b.has_snapshot())
      throw InvalidArgument("save: '" + b.name() + "' was tracked after the last commit");
  }
  for (const ObjectValue& o : s.objects) {
    if (!o.has_snapshot())
      throw InvalidArgument("save: '" + o.name() + "' was tracked after the last commit");
  }
}

// Runs `work` on the directory; an error listing it becomes a CheckpointError naming it.
template <typename Work>
auto in_directory(const fs::path& dir, Work work) {
  try {
    return work();
  } catch (const CheckpointError&) {
    throw;
  } catch (const Error& e) {
    throw CheckpointError("checkpoint directory " + dir.string() + ": " + e.what());
  }
}

// Rank 0, before anything is written: the checks, the directory (made if needed), what crashed
// saves left, and the sequence of this save.
uint64_t begin_save(const StateImpl& s, const fs::path& dir, const CheckpointOptions& options) {
  check_saveable(s, options);
  Directory d = std::move(*open_directory(dir, true));
  return in_directory(dir, [&] {
    uint64_t sequence = next_sequence(d, list(d));
    remove_leftovers(d);
    return sequence;
  });
}

// Rank 0, once every part is in place: the checkpoint file, then the pruning.
CheckpointInfo finish_save(const StateImpl& s, const fs::path& dir, uint64_t sequence,
                           const CheckpointOptions& options) {
  Directory d = std::move(*open_directory(dir, true));
  return in_directory(dir, [&] {
    CheckpointInfo info{sequence, s.commit_count, ""};
    {
      DurableFile file(d, file_name(sequence), options.on_progress);
      CheckpointWriter writer(file);
      write_payload(s, writer, sequence);
      writer.finish();
      info.path = file.final_path();
    }
    prune(d, static_cast<size_t>(options.keep_last));
    if (options.on_progress) options.on_progress(SaveStage::kPruned, 0);
    return info;
  });
}

const Entry& find_entry(const StateImpl& s, const std::string& name) {
  for (const Entry& e : s.entries) {
    if (e.name == name) return e;
  }
  throw wire::MalformedBytes("it holds '" + name + "', which is not tracked");
}

// What a checkpoint file holds, parsed and checked against the tracked values.
struct Staged {
  uint64_t commit_count = 0;
  int saved_size = 0;  // the world that saved its sharded values (0: it has none)
  std::vector<std::function<void()>> apply;
};

// A sharded value's record: its type and length must be the tracked value's; the world size it
// was saved at must be the same for every sharded value.
void stage_sharded(const ShardedValue& v, wire::Reader& in, const std::string& type,
                   Staged& staged) {
  uint64_t length = in.u64();
  uint64_t size = in.u64();
  if (type != cohort::to_string(v.dtype()) || length != v.length()) {
    throw wire::MalformedBytes("'" + v.name() + "' is " + type + ", " + std::to_string(length) +
                               " elements in it but " + std::string(cohort::to_string(v.dtype())) +
                               ", " + std::to_string(v.length()) + " elements here");
  }
  if (size == 0 || size > length || size > (1u << 24) ||
      (staged.saved_size != 0 && size != static_cast<uint64_t>(staged.saved_size))) {
    throw wire::MalformedBytes("'" + v.name() + "' was saved by a world of " +
                               std::to_string(size) + " ranks, which cannot be");
  }
  staged.saved_size = static_cast<int>(size);
}

// Parses one value's contents and checks them against the tracked value `e`; returns what
// applies them (nothing for a sharded value: its parts are read on every rank).
std::function<void()> stage_value(StateImpl& s, wire::Reader& in, const Entry& e,
                                  const std::string& type, const std::string& where,
                                  Staged& staged) {
  if (e.kind == ValueKind::kSharded) {
    stage_sharded(s.sharded[e.index], in, type, staged);
    return [] {};
  }
  if (e.kind == ValueKind::kBuffer) {
    BufferValue& b = s.buffers[e.index];
    auto bytes = in.raw(in.u64());
    if (type != cohort::to_string(b.dtype()) || bytes.size() != b.num_bytes()) {
      throw wire::MalformedBytes("'" + e.name + "' is " + type + ", " +
                                 std::to_string(bytes.size()) + " bytes in it but " +
                                 std::string(cohort::to_string(b.dtype())) + ", " +
                                 std::to_string(b.num_bytes()) + " bytes here");
    }
    std::span<std::byte> live = b.live();
    return [live, bytes] {
      if (!bytes.empty()) std::memcpy(live.data(), bytes.data(), bytes.size());
    };
  }
  if (e.kind == ValueKind::kObject) {
    const ObjectValue& o = s.objects[e.index];
    if (type != o.type_name()) {
      throw wire::MalformedBytes("'" + e.name + "' has type " + type + " in it but " +
                                 o.type_name() + " here");
    }
    return o.parse(in.str(), where);
  }
  SamplerCore& core = s.sampler(e.index);
  auto image = std::make_shared<SamplerCore::Image>(core.read_image(in));
  return [&core, image] { core.load(std::move(*image)); };
}

// Parses and checks the whole payload against the tracked values.
Staged stage(StateImpl& s, std::span<const std::byte> payload, const std::string& where) {
  wire::Reader in(payload);
  in.u64();  // sequence (the file name says it too)
  Staged staged;
  staged.commit_count = in.u64();
  uint64_t count = in.u64();
  std::set<std::string> seen;
  for (uint64_t i = 0; i < count; ++i) {
    std::string name = in.str();
    auto kind = static_cast<ValueKind>(in.u8());
    std::string type = in.str();
    const Entry& e = find_entry(s, name);
    if (!seen.insert(name).second) throw wire::MalformedBytes("it holds '" + name + "' twice");
    if (kind != e.kind) {
      throw wire::MalformedBytes("'" + name + "' is a " + std::string(to_string(kind)) +
                                 " in it but a tracked " + std::string(to_string(e.kind)));
    }
    staged.apply.push_back(stage_value(s, in, e, type, where, staged));
  }
  for (const Entry& e : s.entries) {
    if (!seen.count(e.name)) {
      throw wire::MalformedBytes("'" + e.name + "' is tracked but not in it");
    }
  }
  if (!in.done()) throw wire::MalformedBytes("bytes left over after the last value");
  return staged;
}

// A checkpoint file that rank 0 found good and matching, not yet applied.
struct Candidate {
  CheckpointInfo info;
  std::vector<std::byte> payload;  // what `staged` applies from
  Staged staged;
};

// Rank 0: the newest good checkpoint file (below sequence `below`, if given), staged.
std::optional<Candidate> find_candidate(StateImpl& s, const fs::path& dir,
                                        std::optional<uint64_t> below) {
  std::optional<Directory> d = open_directory(dir, false);
  if (!d) return std::nullopt;
  std::vector<Found> all;
  try {
    all = list(*d);
  } catch (const Error& e) {
    throw CheckpointError("checkpoint directory " + dir.string() + ": " + e.what());
  }
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (below && it->sequence >= *below) continue;
    std::string where = "checkpoint " + it->path;
    std::vector<std::byte> payload;
    try {
      payload = read_verified_payload(*d, it->name);
    } catch (const NotRegularFile& e) {
      warn(std::string(e.what()) + "; skipped");
      continue;
    } catch (const DamagedCheckpoint& e) {
      warn("skipping damaged " + where + ": " + e.what());
      continue;
    }
    Candidate found{{it->sequence, 0, it->path}, std::move(payload), {}};
    try {
      found.staged = stage(s, found.payload, where);
    } catch (const wire::MalformedBytes& e) {
      throw CheckpointError(where + " does not match the tracked values: " + e.what());
    } catch (const InvalidArgument& e) {
      throw CheckpointError(where + ": " + e.what());
    }
    found.info.commit_count = found.staged.commit_count;
    return found;
  }
  return std::nullopt;
}

void write_info(wire::Writer& out, const CheckpointInfo& info) {
  out.u64(info.sequence);
  out.u64(info.commit_count);
  out.str(info.path);
}

CheckpointInfo read_info(wire::Reader& in) {
  CheckpointInfo info;
  info.sequence = in.u64();
  info.commit_count = in.u64();
  info.path = in.str();
  return info;
}

// Rank 0's outcome and result, on every rank; throws on every rank if rank 0 failed.
wire::Reader share_outcome(const StateImpl& s, std::string_view what, const Outcome& outcome,
                           wire::Writer& result, std::vector<std::byte>& storage) {
  wire::Writer out;
  write_outcome(out, outcome);
  out.raw(result.bytes());
  storage =
      broadcast_bytes(s.collective(what),
                      cohort::rank() == 0 ? std::move(out.bytes()) : std::vector<std::byte>{}, 0);
  wire::Reader in(storage);
  Outcome root = read_outcome(in);
  if (!root.ok())
    raise(root.kind, std::string(what) + " failed on rank 0, nothing changed: " + root.message);
  return in;
}

// Every rank's part of a save with sharded values, once rank 0 has begun it; returns the save's
// sequence, or throws on every rank alike (the parts written stay until the next save prunes
// them: no checkpoint file names them).
uint64_t save_parts(const StateImpl& s, const fs::path& dir, const CheckpointOptions& options) {
  uint64_t sequence = 0;
  Outcome outcome;
  if (cohort::rank() == 0) outcome = capture([&] { sequence = begin_save(s, dir, options); });
  wire::Writer result;
  result.u64(sequence);
  std::vector<std::byte> storage;
  wire::Reader in = share_outcome(s, "checkpoint/save/begin", outcome, result, storage);
  sequence = in.u64();
  Outcome mine = capture([&] {
    std::optional<Directory> d = open_directory(dir, false);
    if (!d) {
      throw CheckpointError("checkpoint directory " + dir.string() +
                            " does not exist here (rank 0 made it): every rank must see it");
    }
    write_part(s, *d, sequence);
  });
  raise_if_failed("save", gather_outcomes(s.collective("checkpoint/save/parts"), mine));
  return sequence;
}

// Every rank's sharded values for checkpoint `info`, read from its parts; nothing when some rank
// found a part damaged or missing (rank 0 warns, naming each, and the load goes on to an older
// checkpoint).
std::optional<StagedShards> stage_parts(const StateImpl& s, const fs::path& dir,
                                        const CheckpointInfo& info, int saved_size) {
  StagedShards staged;
  std::string damaged;
  try {
    std::optional<Directory> d = open_directory(dir, false);
    if (!d) throw CheckpointError("the directory does not exist here: every rank must see it");
    staged = read_parts(s, *d, info.sequence, info.commit_count, saved_size);
  } catch (
      const std::exception& e) {  // a rank that threw here alone would leave the others waiting
    damaged = e.what();
  }
  wire::Writer mine;
  mine.str(damaged);
  Gathered all = allgather_bytes(s.collective("checkpoint/load/parts"), mine.bytes());
  std::string skipped;
  for (size_t r = 0; r < all.ranks.size(); ++r) {
    wire::Reader in(all.ranks[r]);
    std::string why = in.str();
    if (!why.empty()) skipped += "; rank " + std::to_string(r) + ": " + why;
  }
  if (skipped.empty()) return staged;
  if (cohort::rank() == 0) warn("skipping checkpoint " + info.path + skipped);
  return std::nullopt;
}

}  // namespace
}  // namespace detail

CheckpointInfo save(const State& state, const std::filesystem::path& dir,
                    const CheckpointOptions& options) {
  const detail::StateImpl& s = detail::StateAccess::impl(state);
  std::optional<uint64_t> sequence;
  if (!s.sharded.empty()) sequence = detail::save_parts(s, dir, options);
  CheckpointInfo info;
  detail::Outcome outcome;
  if (cohort::rank() == 0) {
    outcome = detail::capture([&] {
      uint64_t seq = sequence ? *sequence : detail::begin_save(s, dir, options);
      info = detail::finish_save(s, dir, seq, options);
    });
  }
  wire::Writer result;
  detail::write_info(result, info);
  std::vector<std::byte> storage;
  wire::Reader in = detail::share_outcome(s, "checkpoint/save", outcome, result, storage);
  return detail::read_info(in);
}

std::optional<CheckpointInfo> load_latest(State& state, const std::filesystem::path& dir) {
  detail::StateImpl& s = detail::StateAccess::impl(state);
  detail::agree_on_manifest(s, "load_latest");
  for (std::optional<uint64_t> below;;) {
    std::optional<detail::Candidate> found;
    detail::Outcome outcome;
    if (cohort::rank() == 0)
      outcome = detail::capture([&] { found = detail::find_candidate(s, dir, below); });
    wire::Writer result;
    result.u8(found.has_value());
    detail::write_info(result, found ? found->info : CheckpointInfo{});
    result.u64(found ? static_cast<uint64_t>(found->staged.saved_size) : 0);
    std::vector<std::byte> storage;
    wire::Reader in = detail::share_outcome(s, "checkpoint/load", outcome, result, storage);
    if (in.u8() == 0) return std::nullopt;
    CheckpointInfo info = detail::read_info(in);
    auto saved_size = static_cast<int>(in.u64());
    std::optional<detail::StagedShards> parts;
    if (!s.sharded.empty()) {
      parts = detail::stage_parts(s, dir, info, saved_size);
      if (!parts) {
        below = info.sequence;
        continue;
      }
      detail::apply_parts(s, *parts);
    }
    s.restored = false;  // rank 0's values are the checkpoint's from here on
    if (found) {
      for (auto& apply : found->staged.apply) apply();
      s.commit_count = info.commit_count;
    }
    detail::sync_state(s, true, /*rank_zero=*/true, /*shards_loaded=*/parts.has_value());
    return info;
  }
}

}  // namespace cohort::elastic
