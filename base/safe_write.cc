#include "base/safe_write.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/file_kind.h"

namespace cohort::files {
namespace {

constexpr int kTries = 64;  // fresh temporary names tried before giving up

std::string reason(int error) {
  return std::strerror(error);
}

[[noreturn]] void refuse(const std::string& path, mode_t mode) {
  throw RefusedFile("'" + path + "' is " + kind_of(mode) + "; Cohort writes only regular files");
}

// Refuses `name` in `dir` when it is there and is not a regular file; what it is, if there.
void refuse_unless_regular(const Directory& dir, const std::string& name) {
  if (auto st = dir.entry(name); st && !S_ISREG(st->st_mode))
    refuse(dir.path_of(name), st->st_mode);
}

// Six letters or digits, for a fresh temporary name.
std::string random_suffix() {
  static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char bytes[6] = {};
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    throw Error("getrandom: " + reason(errno));
  }
  std::string out;
  for (unsigned char b : bytes) out += kAlphabet[b % (sizeof kAlphabet - 1)];
  return out;
}

// Creates `temp` in `dir` as a new regular file; EEXIST is returned, not thrown.
Fd create_new(const Directory& dir, const std::string& temp, mode_t mode, int& error) {
  Fd fd(::openat(dir.fd(), temp.c_str(),
                 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode));
  error = fd.valid() ? 0 : errno;
  return fd;
}

// Makes the temporary file: a fixed name after removing a leftover of it, or a fresh name.
Fd create_temporary(const Directory& dir, const std::string& name, const ReplaceOptions& options,
                    std::string& temp) {
  int error = 0;
  if (!options.temp_name.empty()) {
    temp = options.temp_name;
    if (::unlinkat(dir.fd(), temp.c_str(), 0) != 0 && errno != ENOENT) {
      throw Error("cannot remove the leftover '" + dir.path_of(temp) + "': " + reason(errno));
    }
    Fd fd = create_new(dir, temp, options.mode, error);
    if (fd.valid()) return fd;
  } else {
    for (int i = 0; i < kTries; ++i) {
      temp = name + ".tmp." + random_suffix();
      Fd fd = create_new(dir, temp, options.mode, error);
      if (fd.valid()) return fd;
      if (error != EEXIST) break;
    }
  }
  throw Error("cannot create a temporary file '" + dir.path_of(temp) + "': " + reason(error));
}

// O_NONBLOCK off again: writes to the regular file block as usual.
void clear_nonblock(int fd, const std::string& path) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    throw Error("cannot open '" + path + "': fcntl: " + reason(errno));
  }
}

}  // namespace

void write_all(int fd, std::span<const std::byte> bytes, const std::string& path) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("cannot write '" + path + "': " + reason(n < 0 ? errno : EIO));
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
}

Fd open_append(const Directory& dir, const std::string& name) {
  std::string path = dir.path_of(name);
  refuse_unless_regular(dir, name);  // looked at first: a device is never opened
  // O_NONBLOCK: a FIFO that appeared since fails with ENXIO or opens without waiting (refused
  // below) instead of blocking; O_NOFOLLOW: a link that appeared since fails with ELOOP.
  Fd fd(::openat(dir.fd(), name.c_str(),
                 O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644));
  if (!fd.valid()) {
    int error = errno;
    refuse_unless_regular(dir, name);
    throw Error("cannot open '" + path + "': " + reason(error));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw Error("cannot open '" + path + "': fstat: " + reason(errno));
  if (!S_ISREG(st.st_mode)) refuse(path, st.st_mode);
  clear_nonblock(fd.get(), path);
  return fd;
}

Fd open_append(const std::string& path) {
  auto [dir, name] = Directory::of_file(path);
  return open_append(dir, name);
}

void check_replaceable(const Directory& dir, const std::string& name) {
  refuse_unless_regular(dir, name);
}

void check_replaceable(const std::string& path) {
  auto [dir, name] = Directory::of_file(path);
  check_replaceable(dir, name);
  if (::faccessat(dir.fd(), ".", W_OK, AT_EACCESS) != 0) {
    throw Error("cannot write '" + path + "': its directory is not writable: " + reason(errno));
  }
}

ReplacingFile::ReplacingFile(const Directory& dir, std::string name, ReplaceOptions options)
    : dir_(dir), name_(std::move(name)) {
  refuse_unless_regular(dir_, name_);
  fd_ = create_temporary(dir_, name_, options, temp_);
  try {
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0) throw Error("fstat: " + reason(errno));
    if (!S_ISREG(st.st_mode)) refuse(temp_path(), st.st_mode);
    if (options.exact_mode && ::fchmod(fd_.get(), options.mode) != 0) {
      throw Error("cannot set the mode of '" + temp_path() + "': " + reason(errno));
    }
    clear_nonblock(fd_.get(), temp_path());
  } catch (...) {
    ::unlinkat(dir_.fd(), temp_.c_str(), 0);
    throw;
  }
}

ReplacingFile::~ReplacingFile() {
  if (!published_) ::unlinkat(dir_.fd(), temp_.c_str(), 0);
}

void ReplacingFile::write(std::span<const std::byte> bytes) {
  write_all(fd_.get(), bytes, temp_path());
}

void ReplacingFile::close() {
  if (::close(fd_.release()) != 0)
    throw Error("cannot close '" + temp_path() + "': " + reason(errno));
}

void ReplacingFile::publish() {
  refuse_unless_regular(dir_, name_);
  if (::renameat(dir_.fd(), temp_.c_str(), dir_.fd(), name_.c_str()) != 0) {
    throw Error("cannot rename '" + temp_path() + "' to '" + path() + "': " + reason(errno));
  }
  published_ = true;
}

Fd ReplacingFile::release() {
  if (!published_) throw Error("'" + temp_path() + "' released before it was published");
  return std::move(fd_);
}

void write_file_atomically(const std::string& path, std::string_view text, ReplaceOptions options) {
  auto [dir, name] = Directory::of_file(path);
  ReplacingFile file(dir, name, std::move(options));
  file.write(text);
  file.publish();
}

}  // namespace cohort::files
