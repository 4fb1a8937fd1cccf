#include "launcher/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cohort/errors.h"

namespace cohort::discovery {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

[[noreturn]] void refuse(const std::string& path, mode_t mode) {
  throw Error("'" + path + "' is " + kind_of(mode) + "; cohortrun writes only regular files");
}

// Refuses a `path` that exists and is not a regular file (itself, not what a link points to).
void check_not_special(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuse(path, st.st_mode);
}

void write_whole(int fd, const std::string& path, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("cannot write '" + path + "': " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

}  // namespace

Fd open_append_file(const std::string& path) {
  // O_NONBLOCK: a FIFO without a reader fails with ENXIO instead of blocking; O_NOFOLLOW: a
  // symbolic link fails with ELOOP.
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
               0644));
  if (!fd.valid()) {
    int error = errno;
    check_not_special(path);
    throw Error("cannot open '" + path + "': " + std::strerror(error));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    throw Error("cannot open '" + path + "': fstat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) refuse(path, st.st_mode);
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    throw Error("cannot open '" + path + "': fcntl: " + std::strerror(errno));
  }
  return fd;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  check_not_special(path);
  std::string temp = path + ".tmp.XXXXXX";
  Fd fd(::mkostemp(temp.data(), O_CLOEXEC));  // O_CREAT | O_EXCL: never an existing entry
  if (!fd.valid()) {
    throw Error("cannot create a temporary file '" + temp + "': " + std::strerror(errno));
  }
  try {
    // mkostemp makes it 0600; node_exporter's collector reads it as another user.
    if (::fchmod(fd.get(), 0644) != 0) throw Error("fchmod: " + std::string(std::strerror(errno)));
    write_whole(fd.get(), temp, text);
    fd.reset();
    if (::rename(temp.c_str(), path.c_str()) != 0) {
      throw Error("cannot rename '" + temp + "' to '" + path + "': " + std::strerror(errno));
    }
  } catch (const Error&) {
    ::unlink(temp.c_str());
    throw;
  }
}

}  // namespace cohort::discovery
