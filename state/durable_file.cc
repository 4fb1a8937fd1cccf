#include "state/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "cohort/errors.h"

namespace cohort::elastic::detail {
namespace {

// One write() or read() call at most: bounds the progress steps and each read.
constexpr size_t kMaxWrite = 1 << 20;

std::string cause() {
  return std::strerror(errno);
}

std::string kind_of(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "of an unknown kind";
}

// What `path` is when it is not a regular file, without following a link; nothing for a regular
// file, or when lstat fails (the open then says why).
std::optional<std::string> non_regular_kind(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return std::nullopt;
  return kind_of(st.st_mode);
}

}  // namespace

DurableFile::DurableFile(const std::filesystem::path& dir, const std::string& name,
                         Progress progress)
    : dir_(dir),
      temp_(dir / ("." + name + ".tmp")),
      final_(dir / name),
      progress_(std::move(progress)) {
  if (::unlink(temp_.c_str()) != 0 && errno != ENOENT) fail("cannot remove a leftover");
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
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

InputFile::InputFile(const std::filesystem::path& path) : path_(path) {
  auto refuse = [&](const std::string& kind) {
    throw NotRegularFile("checkpoint " + path_.string() + ": it is " + kind +
                         ", not a regular file");
  };
  // Checked before the open too, so that a device node is never opened (opening some has effects).
  if (auto kind = non_regular_kind(path_)) refuse(*kind);
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0 && errno == ELOOP) refuse("a symbolic link");
  if (fd_ < 0) throw CheckpointError("checkpoint " + path_.string() + ": cannot open: " + cause());
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    std::string why = cause();
    ::close(fd_);
    throw CheckpointError("checkpoint " + path_.string() + ": cannot stat: " + why);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    refuse(kind_of(st.st_mode));
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  ::close(fd_);
}

size_t InputFile::read_at(uint64_t offset, std::span<std::byte> out) const {
  size_t done = 0;
  while (done < out.size() && offset + done < size_) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(out.size() - done, size_ - offset - done));
    ssize_t n = ::pread(fd_, out.data() + done, std::min(want, kMaxWrite),
                        static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw CheckpointError("checkpoint " + path_.string() + ": read failed at byte " +
                            std::to_string(offset + done) + ": " + cause());
    }
    if (n == 0) break;  // cut since it was opened
    done += static_cast<size_t>(n);
  }
  return done;
}

}  // namespace cohort::elastic::detail
