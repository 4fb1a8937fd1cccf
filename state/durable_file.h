// A checkpoint file that appears under its final name whole or not at all: written under a
// temporary name in its directory, fsynced, renamed over, and the directory fsynced. And its
// reading side: a checkpoint opened only if it is a regular file, read in bounded steps. Both go
// through base/'s one way of writing and reading files (base/safe_write.h, base/read_file.h),
// relative to the checkpoint directory held open (base/directory.h). Errors raise CheckpointError
// naming the file and the cause.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "base/directory.h"
#include "base/safe_write.h"
#include "cohort/elastic/checkpoint.h"
#include "cohort/errors.h"

namespace cohort::elastic::detail {

using Progress = std::function<void(SaveStage, uint64_t)>;

class DurableFile {
 public:
  // Creates `dir`/.<name>.tmp anew (O_EXCL, after unlinking a leftover of that name), so that a
  // leftover symbolic link or FIFO is never written through or waited on. `dir` must outlive it.
  DurableFile(const files::Directory& dir, const std::string& name, Progress progress);
  DurableFile(const DurableFile&) = delete;
  DurableFile& operator=(const DurableFile&) = delete;

  void append(std::span<const std::byte> bytes);
  void write_at(uint64_t offset, std::span<const std::byte> bytes);
  // fsync, rename to `dir`/name, fsync the directory. The temporary file is removed (by its
  // ReplacingFile) unless this succeeded.
  void commit();

  uint64_t size() const { return size_; }
  std::string final_path() const { return file_->path(); }

 private:
  [[noreturn]] void fail(const std::string& what) const;
  void report(SaveStage stage) const;

  const files::Directory& dir_;
  std::string temp_path_;
  Progress progress_;
  std::optional<files::ReplacingFile> file_;
  uint64_t size_ = 0;
};

// Raised by InputFile for a path that is not a regular file; the message says what it is.
class NotRegularFile : public cohort::CheckpointError {
 public:
  using cohort::CheckpointError::CheckpointError;
};

// A checkpoint open for reading, by its own name in its directory. Anything but a regular file is
// refused before any read: a symbolic link is not followed, the open cannot block on a FIFO, and
// a device is never opened (base/read_file.h, open_regular).
class InputFile {
 public:
  // Throws NotRegularFile, or CheckpointError if it cannot be opened.
  InputFile(const files::Directory& dir, const std::string& name);

  const std::string& path() const { return path_; }
  // Its size when it was opened: what every read is bounded by.
  uint64_t size() const { return size_; }
  // Fills `out` from `offset` (at most size() - offset bytes); returns how many bytes it read,
  // fewer only if the file was cut meanwhile. Throws CheckpointError on a read error.
  size_t read_at(uint64_t offset, std::span<std::byte> out) const;

 private:
  std::string path_;
  Fd fd_;
  uint64_t size_ = 0;
};

}  // namespace cohort::elastic::detail
