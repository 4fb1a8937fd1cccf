// A file that appears under its final name whole or not at all: written under a temporary name
// in the same directory, fsynced, renamed over, and the directory fsynced. And its reading side:
// a file opened only if it is a regular file, read in bounded steps. Errors raise CheckpointError
// naming the file and the cause.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cohort/elastic/checkpoint.h"
#include "cohort/errors.h"

namespace cohort::elastic::detail {

using Progress = std::function<void(SaveStage, uint64_t)>;

class DurableFile {
 public:
  // Creates `dir/.<name>.tmp` anew (O_EXCL, after unlinking a leftover of that name), so that a
  // leftover symbolic link or FIFO is never written through or waited on.
  DurableFile(const std::filesystem::path& dir, const std::string& name, Progress progress);
  // Removes the temporary file unless commit() succeeded.
  ~DurableFile();
  DurableFile(const DurableFile&) = delete;
  DurableFile& operator=(const DurableFile&) = delete;

  void append(std::span<const std::byte> bytes);
  void write_at(uint64_t offset, std::span<const std::byte> bytes);
  // fsync, close, rename to `dir/name`, fsync the directory.
  void commit();

  uint64_t size() const { return size_; }
  const std::filesystem::path& final_path() const { return final_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;
  void report(SaveStage stage) const;

  std::filesystem::path dir_, temp_, final_;
  Progress progress_;
  int fd_ = -1;
  uint64_t size_ = 0;
  bool committed_ = false;
};

void fsync_directory(const std::filesystem::path& dir);

// Raised by InputFile for a path that is not a regular file; the message says what it is.
class NotRegularFile : public cohort::CheckpointError {
 public:
  using cohort::CheckpointError::CheckpointError;
};

// A regular file open for reading. Anything else is refused before any read: a symbolic link is
// not followed (O_NOFOLLOW) and the open cannot block on a FIFO (O_NONBLOCK), then fstat decides,
// so a device or a FIFO that appears between the check and the open is refused too.
class InputFile {
 public:
  // Throws NotRegularFile, or CheckpointError if it cannot be opened.
  explicit InputFile(const std::filesystem::path& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // Its size when it was opened: what every read is bounded by.
  uint64_t size() const { return size_; }
  // Fills `out` from `offset` (at most size() - offset bytes); returns how many bytes it read,
  // fewer only if the file was cut meanwhile. Throws CheckpointError on a read error.
  size_t read_at(uint64_t offset, std::span<std::byte> out) const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace cohort::elastic::detail
