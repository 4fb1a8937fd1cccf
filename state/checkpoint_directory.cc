#include "state/checkpoint_directory.h"

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
#include "cohort/errors.h"
#include "state/checkpoint_shards.h"

namespace cohort::elastic::detail {

namespace fs = std::filesystem;
using files::Directory;

std::string file_name(uint64_t sequence) {
  char name[64];
  std::snprintf(name, sizeof name, "ckpt-%020" PRIu64 ".cohort", sequence);
  return name;
}

namespace {

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

}  // namespace

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

void remove_leftovers(const Directory& dir) {
  for (const std::string& name : dir.names()) {
    if (!is_temporary(name)) continue;
    if (::unlinkat(dir.fd(), name.c_str(), 0) != 0) {
      warn("cannot remove leftover " + dir.path_of(name) + ": " + std::strerror(errno));
    }
  }
}

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

// A part file goes with its checkpoint: one of no kept checkpoint (pruned, or of a save that
// failed) is removed too.
void prune(const Directory& dir, size_t keep) {
  std::vector<Found> all = list(dir);
  std::erase_if(all, [](const Found& f) { return !f.regular; });
  auto remove = [&](const std::string& name, const char* what) {
    if (::unlinkat(dir.fd(), name.c_str(), 0) != 0 && errno != ENOENT)
      warn(std::string("cannot remove ") + what + dir.path_of(name) + ": " + std::strerror(errno));
  };
  std::set<uint64_t> kept;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i + keep < all.size()) {
      remove(all[i].name, "old checkpoint ");
    } else {
      kept.insert(all[i].sequence);
    }
  }
  for (const std::string& name : dir.names()) {
    auto seq = part_sequence_of(name);
    auto entry = seq ? dir.entry(name) : std::nullopt;
    if (entry && S_ISREG(entry->st_mode) && !kept.count(*seq)) remove(name, "old checkpoint part ");
  }
}

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

}  // namespace cohort::elastic::detail
