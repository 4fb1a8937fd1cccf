// The names in a checkpoint directory and the work on them (state/checkpoint.cc): which entries
// are checkpoints, temporaries of crashed saves or parts of sharded values
// (state/checkpoint_shards.h), the sequence of the next save, pruning, and opening the directory
// itself without following a link.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/directory.h"

namespace cohort::elastic::detail {

// "ckpt-<sequence, 20 digits>.cohort".
std::string file_name(uint64_t sequence);

// An entry named like a checkpoint, whatever it is.
struct Found {
  uint64_t sequence;
  std::string name;
  std::string path;
  bool regular;  // the entry itself (a symbolic link is not followed)
};

// Every entry named like a checkpoint, oldest first. Only regular files are checkpoints; the
// others are listed so that a save never takes their names.
std::vector<Found> list(const files::Directory& dir);

// "[cohort] warning: ..." on stderr.
void warn(const std::string& message);

// Removes what crashed saves left (temporaries that may hold much of a disk), before the new
// file is written. A directory of that name is left alone.
void remove_leftovers(const files::Directory& dir);

// The sequence of the next save: above every name in the directory, so it never takes an
// existing name and is always the newest. Throws CheckpointError after 2^64 - 1 (a wrapped
// sequence would be the oldest, pruned at once after a save that reported success).
uint64_t next_sequence(const files::Directory& dir, const std::vector<Found>& existing);

// Removes the checkpoints beyond the newest `keep`, and the part files of no kept checkpoint.
// Only regular files count and are removed: an entry of another kind is not a checkpoint (load
// skips it) and is not ours to delete.
void prune(const files::Directory& dir, size_t keep);

// `dir` open (made first if `create`), or nothing where it does not exist and is not to be made.
// Throws CheckpointError naming it when it is not a directory itself (a symbolic link, a FIFO, a
// file, a device) or cannot be made or opened.
std::optional<files::Directory> open_directory(const std::filesystem::path& dir, bool create);

}  // namespace cohort::elastic::detail
