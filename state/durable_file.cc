#include "state/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cohort/errors.h"

namespace cohort::elastic::detail {
namespace {

constexpr size_t kMaxWrite = 1 << 20;  // one write() call at most: bounds the progress steps

std::string cause() {
  return std::strerror(errno);
}

}  // namespace

DurableFile::DurableFile(const std::filesystem::path& dir, const std::string& name,
                         Progress progress)
    : dir_(dir),
      temp_(dir / ("." + name + ".tmp")),
      final_(dir / name),
      progress_(std::move(progress)) {
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot create");
  report(SaveStage::kCreated);
}

DurableFile::~DurableFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void DurableFile::fail(const std::string& what) const {
  throw CheckpointError("checkpoint " + temp_.string() + ": " + what + " (after " +
                        std::to_string(size_) + " bytes): " + cause());
}

void DurableFile::report(SaveStage stage) const {
  if (progress_) progress_(stage, size_);
}

void DurableFile::append(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd_, bytes.data(), std::min(bytes.size(), kMaxWrite));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write failed");
    size_ += static_cast<uint64_t>(n);
    bytes = bytes.subspan(static_cast<size_t>(n));
    report(SaveStage::kWrote);
  }
}

void DurableFile::write_at(uint64_t offset, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write failed");
    offset += static_cast<uint64_t>(n);
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
  report(SaveStage::kHeaderWritten);
}

void DurableFile::commit() {
  if (::fsync(fd_) != 0) fail("fsync failed");
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close failed");
  report(SaveStage::kSynced);
  if (::rename(temp_.c_str(), final_.c_str()) != 0)
    fail("rename to " + final_.string() + " failed");
  committed_ = true;
  report(SaveStage::kRenamed);
  fsync_directory(dir_);
  report(SaveStage::kDirectorySynced);
}

void fsync_directory(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    std::string why = cause();
    if (fd >= 0) ::close(fd);
    throw CheckpointError("checkpoint directory " + dir.string() + ": fsync failed: " + why);
  }
  ::close(fd);
}

std::vector<std::byte> read_file(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw CheckpointError("checkpoint " + path.string() + ": cannot open: " + cause());
  std::vector<std::byte> bytes;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) bytes.reserve(static_cast<size_t>(st.st_size));
  std::byte chunk[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string why = cause();
      ::close(fd);
      throw CheckpointError("checkpoint " + path.string() + ": read failed: " + why);
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  ::close(fd);
  return bytes;
}

}  // namespace cohort::elastic::detail
