// Durable checkpoints of a State: the last commit, written by rank 0 so that a crash at any moment
// leaves the previous checkpoint loadable, and loaded back into every rank.
//
//   state.commit();
//   cohort::elastic::save(state, "/ckpt");                  // every rank calls it
//   ...
//   if (auto loaded = cohort::elastic::load_latest(state, "/ckpt")) { ... resumed ... }
//
// A save writes `<dir>/.ckpt-<sequence>.cohort.tmp`, flushes and fsyncs it, renames it to
// `<dir>/ckpt-<sequence>.cohort` (atomic), fsyncs the directory, then keeps only the newest
// keep_last checkpoints. Sequences increase with every save into the directory. The file holds a
// SHA-256 of its contents; a load skips files that are damaged (wrong size, bad checksum) and
// takes the newest good one. One job writes a directory at a time.
//
// Sharded values (cohort/elastic/sharded.h) are never gathered: every rank writes its range to a
// part file `<dir>/ckpt-<sequence>.rank-<r>-of-<n>.part` before rank 0 writes the checkpoint file,
// and a load, in a world of any size, gives every rank its new range read from the parts that
// hold it; a checkpoint with a damaged or missing part is skipped for the one before. With
// sharded values `dir` must be the same directory on every rank (docs/state.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "cohort/elastic/state.h"

namespace cohort::elastic {

// The steps of a save, in order, as reported to CheckpointOptions::on_progress.
enum class SaveStage {
  kCreated,          // the temporary file exists, empty
  kWrote,            // a write() of the contents completed (reported after each one)
  kHeaderWritten,    // the header with length and checksum is in place
  kSynced,           // the file is fsynced and closed
  kRenamed,          // the file has its final name: from here on it is the newest checkpoint
  kDirectorySynced,  // the rename is durable
  kPruned,           // checkpoints beyond keep_last are removed
};

// How save() writes a checkpoint.
struct CheckpointOptions {
  // Checkpoints kept in the directory after a save (at least 1).
  int keep_last = 3;
  // Called on rank 0 after each step of a save with the bytes written so far (progress reports;
  // tests use it to kill the writer at exact points).
  std::function<void(SaveStage stage, uint64_t bytes_written)> on_progress;
};

// Which checkpoint save() wrote or load_latest() loaded.
struct CheckpointInfo {
  uint64_t sequence = 0;      // its place among the directory's saves, from 1
  uint64_t commit_count = 0;  // the State's commit_count() when it was saved
  std::string path;           // the checkpoint file
};

// Collective. Rank 0 writes the State's last commit (not the values as they are now) into `dir`
// (created if needed); the other ranks wait for it. `dir` is written into by its own name: it
// must be a directory itself, never a symbolic link to one (the directories above it are
// followed), and every file in it is made, renamed and removed relative to it. Throws on every
// rank if it fails: CheckpointError for I/O errors (disk full, permission, ...), when `dir` is
// not a directory (a symbolic link, a FIFO, a file, a device: nothing is written) and when `dir`
// holds a checkpoint name at the largest sequence (2^64 - 1, which no save can follow);
// InvalidArgument if there is no commit yet or a value was tracked after it. A failed save leaves
// the earlier checkpoints as they were.
CheckpointInfo save(const State& state, const std::filesystem::path& dir,
                    const CheckpointOptions& options = {});

// Collective. Rank 0 loads the newest good checkpoint of `dir` into the tracked values, skipping
// (with a warning on stderr) damaged or partial files and entries that are not regular files
// (symbolic links, directories, FIFOs, ...: never followed, opened without blocking); then every
// rank takes rank 0's values as in sync(), drops its samplers' uncommitted records, and takes the
// result as its last commit. Returns nothing, changing nothing, if `dir` holds no good checkpoint.
// Throws CheckpointError on every rank, changing nothing, if the newest good checkpoint does not
// match the tracked values (names, kinds, types, sizes) or cannot be read, and when `dir` exists
// and is not a directory itself (a symbolic link to one included), as for save().
std::optional<CheckpointInfo> load_latest(State& state, const std::filesystem::path& dir);

}  // namespace cohort::elastic
