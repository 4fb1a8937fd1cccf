#include "base/read_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/deadline.h"
#include "base/file_kind.h"

namespace cohort::files {
namespace {

std::string reason(int error) {
  return std::strerror(error);
}

std::string named(const ReadRule& rule, const std::string& path) {
  return std::string(rule.what) + " '" + path + "'";
}

[[noreturn]] void refuse_kind(const ReadRule& rule, const std::string& path, mode_t mode) {
  throw RefusedFile(named(rule, path) + " is " + kind_of(mode) + "; Cohort reads it only from " +
                    (rule.pipes ? "a regular file or a pipe, of" : "a regular file of") +
                    " at most " + size_text(rule.max_bytes));
}

[[noreturn]] void refuse_size(const ReadRule& rule, const std::string& path, const char* what) {
  throw RefusedFile(named(rule, path) + " " + what + " more than the " + size_text(rule.max_bytes) +
                    " Cohort reads of it");
}

void check(const ReadRule& rule, const std::string& path, const struct stat& st) {
  if (!S_ISREG(st.st_mode) && !(rule.pipes && S_ISFIFO(st.st_mode))) {
    refuse_kind(rule, path, st.st_mode);
  }
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > rule.max_bytes) {
    refuse_size(rule, path, ("holds " + std::to_string(st.st_size) + " bytes,").c_str());
  }
}

// Waits until `fd` (a pipe) has bytes or its end, at most until `deadline`.
void wait_readable(int fd, const ReadRule& rule, const std::string& path,
                   SteadyClock::time_point deadline, size_t read_so_far) {
  pollfd p{fd, POLLIN, 0};
  int left = poll_millis(deadline);
  int n = left == 0 ? 0 : ::poll(&p, 1, left);
  if (n < 0 && errno != EINTR)
    throw Error("cannot read " + named(rule, path) + ": poll: " + reason(errno));
  if (n == 0) {
    throw RefusedFile(named(rule, path) + ": its writer did not finish within " +
                      std::to_string(rule.pipe_timeout.count()) + " ms (" +
                      std::to_string(read_so_far) + " bytes read)");
  }
}

}  // namespace

std::string size_text(size_t bytes) {
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

std::string read_bounded(const std::string& path, const ReadRule& rule) {
  struct stat st {};
  // Looked at before it is opened: a device is never opened (opening some has effects).
  if (::stat(path.c_str(), &st) != 0)
    throw Error("cannot read " + named(rule, path) + ": " + reason(errno));
  check(rule, path, st);
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));  // a FIFO opens at once
  if (!fd.valid()) throw Error("cannot read " + named(rule, path) + ": " + reason(errno));
  if (::fstat(fd.get(), &st) != 0)
    throw Error("cannot read " + named(rule, path) + ": " + reason(errno));
  check(rule, path, st);  // what was opened, should the path have changed meanwhile
  SteadyClock::time_point deadline = SteadyClock::now() + rule.pipe_timeout;
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      wait_readable(fd.get(), rule, path, deadline, text.size());
      continue;
    }
    if (n < 0) throw Error("cannot read " + named(rule, path) + ": " + reason(errno));
    if (n == 0) return text;
    if (text.size() + static_cast<size_t>(n) > rule.max_bytes) refuse_size(rule, path, "holds");
    text.append(buf, static_cast<size_t>(n));
  }
}

RegularFile open_regular(const Directory& dir, const std::string& name) {
  std::string path = dir.path_of(name);
  auto refuse = [&](mode_t mode) {
    throw RefusedFile("'" + path + "' is " + kind_of(mode) + ", not a regular file");
  };
  // Looked at first, so that a device node is never opened (opening some has effects).
  if (auto st = dir.entry(name); st && !S_ISREG(st->st_mode)) refuse(st->st_mode);
  RegularFile file{
      Fd(::openat(dir.fd(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC))};
  if (!file.fd.valid()) {
    int error = errno;
    if (auto st = dir.entry(name); st && !S_ISREG(st->st_mode)) refuse(st->st_mode);
    throw Error("cannot open '" + path + "': " + reason(error));
  }
  struct stat st {};
  if (::fstat(file.fd.get(), &st) != 0) throw Error("cannot stat '" + path + "': " + reason(errno));
  if (!S_ISREG(st.st_mode)) refuse(st.st_mode);
  file.size = static_cast<uint64_t>(st.st_size);
  return file;
}

}  // namespace cohort::files
