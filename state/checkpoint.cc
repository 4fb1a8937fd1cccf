// save() and load_latest(): rank 0 does the file work, the outcome is broadcast so every rank
// returns or throws alike, and a load ends with a sync so every rank holds the loaded state.
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
#include "state/checkpoint_format.h"
#include "state/state_impl.h"

namespace cohort::elastic {
namespace detail {
namespace {

namespace fs = std::filesystem;

std::string file_name(uint64_t sequence) {
  char name[64];
  std::snprintf(name, sizeof name, "ckpt-%020" PRIu64 ".cohort", sequence);
  return name;
}

// The sequence of a checkpoint's file name; nothing for any other name (temporaries included,
// and 20 digits beyond 2^64 - 1, which no save writes).
std::optional<uint64_t> sequence_of(const std::string& name) {
  if (name.size() != 5 + 20 + 7 || name.rfind("ckpt-", 0) != 0 ||
      name.compare(25, 7, ".cohort") != 0) {
    return std::nullopt;
  }
  uint64_t value = 0;
  for (size_t i = 5; i < 25; ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    auto digit = static_cast<uint64_t>(name[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

bool is_temporary(const std::string& name) {
  return name.rfind(".ckpt-", 0) == 0 && name.size() > 4 &&
         name.compare(name.size() - 4, 4, ".tmp") == 0;
}

using files::Directory;

struct Found {
  uint64_t sequence;
  std::string name;
  std::string path;
  bool regular;  // the entry itself (a symbolic link is not followed)
};

// Every entry named like a checkpoint, whatever it is, oldest first. Only regular files are
// checkpoints; the others are listed so that a save never takes their names.
std::vector<Found> list(const Directory& dir) {
  std::vector<Found> out;
  for (const std::string& name : dir.names()) {
    auto seq = sequence_of(name);
    if (!seq) continue;
    auto entry = dir.entry(name);
    out.push_back({*seq, name, dir.path_of(name), entry && S_ISREG(entry->st_mode)});
  }
  std::sort(out.begin(), out.end(),
            [](const Found& a, const Found& b) { return a.sequence < b.sequence; });
  return out;
}

void warn(const std::string& message) {
  std::cerr << "[cohort] warning: " + message + "\n" << std::flush;
}

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
    } else {
      r.str("");
      s.sampler(e.index).write_committed_header(r);
      s.sampler(e.index).write_committed_words(
          [&](std::span<const uint64_t> words) { w.raw(std::as_bytes(words)); });
    }
  }
}

// Durable checkpoints do not hold sharded values yet (each rank would write its own range).
void refuse_sharded(const StateImpl& s, std::string_view what) {
  if (s.sharded.empty()) return;
  throw InvalidArgument(std::string(what) + ": '" + s.sharded.front().name() +
                        "' is a sharded value, which durable checkpoints do not hold yet");
}

void check_saveable(const StateImpl& s, const CheckpointOptions& options) {
  if (options.keep_last < 1) throw InvalidArgument("save: keep_last must be at least 1");
  if (!s.has_commit) throw InvalidArgument("save: there is no commit to save: commit() first");
  refuse_sharded(s, "save");
  for (const BufferValue& b : s.buffers) {
    if (!b.has_snapshot())
      throw InvalidArgument("save: '" + b.name() + "' was tracked after the last commit");
  }
  for (const ObjectValue& o : s.objects) {
    if (!o.has_snapshot())
      throw InvalidArgument("save: '" + o.name() + "' was tracked after the last commit");
  }
}

// Removes what crashed saves left (temporaries that may hold much of a disk), before the new
// file is written. A directory of that name is left alone.
void remove_leftovers(const Directory& dir) {
  for (const std::string& name : dir.names()) {
    if (!is_temporary(name)) continue;
    if (::unlinkat(dir.fd(), name.c_str(), 0) != 0) {
      warn("cannot remove leftover " + dir.path_of(name) + ": " + std::strerror(errno));
    }
  }
}

// The sequence of the next save: above every name in the directory, so it never takes an
// existing name and is always the newest. Refused rather than wrapped to 0 after 2^64 - 1: a
// wrapped sequence would be the oldest, pruned at once after a save that reported success.
uint64_t next_sequence(const Directory& dir, const std::vector<Found>& existing) {
  if (existing.empty()) return 1;
  const Found& last = existing.back();
  if (last.sequence == UINT64_MAX) {
    throw CheckpointError("checkpoint directory " + dir.path() + ": cannot save after " +
                          last.path +
                          ": it has the largest possible sequence (2^64 - 1), so no checkpoint "
                          "can follow it; move it out of the directory (nothing was written)");
  }
  return last.sequence + 1;
}

// Removes the checkpoints beyond the newest `keep`. Only regular files count and are removed:
// an entry of another kind is not a checkpoint (load skips it) and is not ours to delete.
void prune(const Directory& dir, size_t keep) {
  std::vector<Found> all = list(dir);
  std::erase_if(all, [](const Found& f) { return !f.regular; });
  for (size_t i = 0; i + keep < all.size(); ++i) {
    if (::unlinkat(dir.fd(), all[i].name.c_str(), 0) != 0 && errno != ENOENT)
      warn("cannot remove old checkpoint " + all[i].path + ": " + std::strerror(errno));
  }
}

// `dir` open (made first if `create`), or nothing where it does not exist and is not to be made.
// Throws CheckpointError naming it when it is not a directory itself (a symbolic link, a FIFO, a
// file, a device) or cannot be made or opened.
std::optional<Directory> open_directory(const fs::path& dir, bool create) {
  try {
    if (create) return Directory::open(dir.string(), Directory::Create::kYes);
    return Directory::open_if_exists(dir.string());
  } catch (const files::RefusedFile& e) {  // "'DIR' is a FIFO, not a directory"
    throw CheckpointError("checkpoint directory " + std::string(e.what()));
  } catch (const Error& e) {
    throw CheckpointError("checkpoint directory " + dir.string() + ": " + e.what());
  }
}

CheckpointInfo save_on_root(const StateImpl& s, const fs::path& dir,
                            const CheckpointOptions& options) {
  check_saveable(s, options);
  Directory d = std::move(*open_directory(dir, true));
  try {
    uint64_t sequence = next_sequence(d, list(d));
    remove_leftovers(d);
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
  } catch (const CheckpointError&) {
    throw;
  } catch (const Error& e) {  // listing the directory
    throw CheckpointError("checkpoint directory " + dir.string() + ": " + e.what());
  }
}

const Entry& find_entry(const StateImpl& s, const std::string& name) {
  for (const Entry& e : s.entries) {
    if (e.name == name) return e;
  }
  throw wire::MalformedBytes("it holds '" + name + "', which is not tracked");
}

// Parses one value's contents and checks them against the tracked value `e`; returns what
// applies them.
std::function<void()> stage_value(StateImpl& s, wire::Reader& in, const Entry& e,
                                  const std::string& type, const std::string& where) {
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

// Parses and checks the whole payload against the tracked values; returns what applies it.
std::vector<std::function<void()>> stage(StateImpl& s, std::span<const std::byte> payload,
                                         const std::string& where, uint64_t& commit_count) {
  wire::Reader in(payload);
  in.u64();  // sequence (the file name says it too)
  commit_count = in.u64();
  uint64_t count = in.u64();
  std::vector<std::function<void()>> apply;
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
    apply.push_back(stage_value(s, in, e, type, where));
  }
  for (const Entry& e : s.entries) {
    if (!seen.count(e.name)) {
      throw wire::MalformedBytes("'" + e.name + "' is tracked but not in it");
    }
  }
  if (!in.done()) throw wire::MalformedBytes("bytes left over after the last value");
  return apply;
}

std::optional<CheckpointInfo> load_on_root(StateImpl& s, const fs::path& dir) {
  std::optional<Directory> d = open_directory(dir, false);
  if (!d) return std::nullopt;
  std::vector<Found> all;
  try {
    all = list(*d);
  } catch (const Error& e) {
    throw CheckpointError("checkpoint directory " + dir.string() + ": " + e.what());
  }
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
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
    uint64_t commit_count = 0;
    std::vector<std::function<void()>> apply;
    try {
      apply = stage(s, payload, where, commit_count);
    } catch (const wire::MalformedBytes& e) {
      throw CheckpointError(where + " does not match the tracked values: " + e.what());
    } catch (const InvalidArgument& e) {
      throw CheckpointError(where + ": " + e.what());
    }
    for (auto& a : apply) a();
    s.commit_count = commit_count;
    return CheckpointInfo{it->sequence, commit_count, it->path};
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

}  // namespace
}  // namespace detail

CheckpointInfo save(const State& state, const std::filesystem::path& dir,
                    const CheckpointOptions& options) {
  const detail::StateImpl& s = detail::StateAccess::impl(state);
  CheckpointInfo info;
  detail::Outcome outcome;
  if (cohort::rank() == 0)
    outcome = detail::capture([&] { info = detail::save_on_root(s, dir, options); });
  wire::Writer result;
  detail::write_info(result, info);
  std::vector<std::byte> storage;
  wire::Reader in = detail::share_outcome(s, "checkpoint/save", outcome, result, storage);
  return detail::read_info(in);
}

std::optional<CheckpointInfo> load_latest(State& state, const std::filesystem::path& dir) {
  detail::StateImpl& s = detail::StateAccess::impl(state);
  detail::refuse_sharded(s, "load_latest");
  detail::agree_on_manifest(s, "load_latest");
  std::optional<CheckpointInfo> found;
  detail::Outcome outcome;
  if (cohort::rank() == 0) outcome = detail::capture([&] { found = detail::load_on_root(s, dir); });
  wire::Writer result;
  result.u8(found.has_value());
  detail::write_info(result, found.value_or(CheckpointInfo{}));
  std::vector<std::byte> storage;
  wire::Reader in = detail::share_outcome(s, "checkpoint/load", outcome, result, storage);
  if (in.u8() == 0) return std::nullopt;
  CheckpointInfo info = detail::read_info(in);
  detail::sync_state(s, true, /*rank_zero=*/true);
  return info;
}

}  // namespace cohort::elastic
