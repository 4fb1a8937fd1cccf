#include "state/durable_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/file_kind.h"
#include "base/read_file.h"

namespace cohort::elastic::detail {
namespace {

// One write() or read() call at most: bounds the progress steps and each read.
constexpr size_t kMaxWrite = 1 << 20;

std::string cause() {
  return std::strerror(errno);
}

}  // namespace

DurableFile::DurableFile(const files::Directory& dir, const std::string& name, Progress progress)
    : dir_(dir), temp_path_(dir.path_of("." + name + ".tmp")), progress_(std::move(progress)) {
  try {
    file_.emplace(dir_, name, files::ReplaceOptions{.temp_name = "." + name + ".tmp"});
  } catch (const Error& e) {
    throw CheckpointError("checkpoint " + temp_path_ + ": cannot create: " + e.what());
  }
  report(SaveStage::kCreated);
}

void DurableFile::fail(const std::string& what) const {
  throw CheckpointError("checkpoint " + temp_path_ + ": " + what + " (after " +
                        std::to_string(size_) + " bytes): " + cause());
}

void DurableFile::report(SaveStage stage) const {
  if (progress_) progress_(stage, size_);
}

void DurableFile::append(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(file_->fd(), bytes.data(), std::min(bytes.size(), kMaxWrite));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write failed");
    size_ += static_cast<uint64_t>(n);
    bytes = bytes.subspan(static_cast<size_t>(n));
    report(SaveStage::kWrote);
  }
}

void DurableFile::write_at(uint64_t offset, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::pwrite(file_->fd(), bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write failed");
    offset += static_cast<uint64_t>(n);
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
  report(SaveStage::kHeaderWritten);
}

void DurableFile::commit() {
  if (::fsync(file_->fd()) != 0) fail("fsync failed");
  try {
    file_->close();
    report(SaveStage::kSynced);
    file_->publish();
    report(SaveStage::kRenamed);
    dir_.sync();
  } catch (const Error& e) {
    throw CheckpointError("checkpoint " + temp_path_ + ": " + e.what());
  }
  report(SaveStage::kDirectorySynced);
}

InputFile::InputFile(const files::Directory& dir, const std::string& name)
    : path_(dir.path_of(name)) {
  try {
    files::RegularFile file = files::open_regular(dir, name);
    fd_ = std::move(file.fd);
    size_ = file.size;
  } catch (const files::RefusedFile& e) {
    throw NotRegularFile("checkpoint " + std::string(e.what()));
  } catch (const Error& e) {
    throw CheckpointError("checkpoint " + std::string(e.what()));
  }
}

size_t InputFile::read_at(uint64_t offset, std::span<std::byte> out) const {
  size_t done = 0;
  while (done < out.size() && offset + done < size_) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(out.size() - done, size_ - offset - done));
    ssize_t n = ::pread(fd_.get(), out.data() + done, std::min(want, kMaxWrite),
                        static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw CheckpointError("checkpoint " + path_ + ": read failed at byte " +
                            std::to_string(offset + done) + ": " + cause());
    }
    if (n == 0) break;  // cut since it was opened
    done += static_cast<size_t>(n);
  }
  return done;
}

}  // namespace cohort::elastic::detail
