// A file that appears under its final name whole or not at all: written under a temporary name
// in the same directory, fsynced, renamed over, and the directory fsynced. Plus the directory
// listing the checkpoint code needs. Errors raise CheckpointError naming the file and the cause.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cohort/elastic/checkpoint.h"

namespace cohort::elastic::detail {

using Progress = std::function<void(SaveStage, uint64_t)>;

class DurableFile {
 public:
  // Creates `dir/.<name>.tmp`, replacing a leftover of that name.
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

// Reads a whole file; throws CheckpointError if it cannot.
std::vector<std::byte> read_file(const std::filesystem::path& path);

}  // namespace cohort::elastic::detail
