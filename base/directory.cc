#include "base/directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/file_kind.h"

namespace cohort::files {
namespace {

constexpr int kDirectoryFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK;

std::string reason(int error) {
  return std::strerror(error);
}

[[noreturn]] void refuse(const std::string& path, mode_t mode) {
  if (S_ISLNK(mode)) {
    throw RefusedFile("'" + path +
                      "' is a symbolic link; Cohort writes into a directory only by its own name, "
                      "never through a link (name the directory it points to)");
  }
  throw RefusedFile("'" + path + "' is " + kind_of(mode) + ", not a directory");
}

// `path` without the slashes that end it ("/" stays "/").
std::string without_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// Where `path`'s last component begins; its directory is path.substr(0, split).
size_t last_component(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? 0 : slash + 1;
}

// Opens `path` as the system resolves it, links included: a directory the operator names above
// the one Cohort writes into.
Fd open_followed(const std::string& path) {
  return Fd(::open(path.empty() ? "." : path.c_str(), kDirectoryFlags));
}

}  // namespace

Directory Directory::open(const std::string& given, Create create) {
  if (given.empty()) throw InvalidArgument("an empty path names no directory");
  std::string path = without_trailing_slashes(given);
  size_t split = last_component(path);
  std::string name = path.substr(split);
  if (name.empty() || name == "." || name == "..") {  // "/", ".", "a/..": never a link
    Fd fd = open_followed(path);
    if (!fd.valid()) throw Error("cannot open directory '" + given + "': " + reason(errno));
    return Directory(std::move(fd), given);
  }
  std::string above = split == 0 ? "" : path.substr(0, split == 1 ? 1 : split - 1);
  std::error_code made;
  if (create == Create::kYes && !above.empty()) std::filesystem::create_directories(above, made);
  Fd parent = open_followed(above);
  if (!parent.valid()) {
    std::string why = made ? "cannot create directory '" : "cannot open directory '";
    throw Error(why + (above.empty() ? "." : above) + "' (above '" + given +
                "'): " + (made ? made.message() : reason(errno)));
  }
  Directory directory(std::move(parent), above);
  Directory opened = directory.child(name, create);
  opened.path_ = given;
  return opened;
}

std::optional<Directory> Directory::open_if_exists(const std::string& path) {
  struct stat st {};
  if (!path.empty() && ::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return std::nullopt;
  return open(path, Create::kNo);
}

std::pair<Directory, std::string> Directory::of_file(const std::string& path) {
  size_t split = last_component(path);
  std::string name = path.substr(split);
  if (name.empty() || name == "." || name == "..") {
    throw InvalidArgument("'" + path + "' names no file");
  }
  std::string above = split == 0 ? "" : path.substr(0, split == 1 ? 1 : split - 1);
  Fd fd = open_followed(above);
  if (!fd.valid()) {
    throw Error("cannot write '" + path + "': its directory '" + (above.empty() ? "." : above) +
                "' cannot be opened: " + reason(errno));
  }
  return {Directory(std::move(fd), above), name};
}

Directory Directory::child(const std::string& name, Create create) const {
  std::string path = path_of(name);
  if (create == Create::kYes && ::mkdirat(fd(), name.c_str(), 0755) != 0 && errno != EEXIST) {
    throw Error("cannot create directory '" + path + "': " + reason(errno));
  }
  // Looked at first, so that nothing but a directory is ever opened.
  if (auto st = entry(name); st && !S_ISDIR(st->st_mode)) refuse(path, st->st_mode);
  Fd opened(::openat(fd(), name.c_str(), kDirectoryFlags | O_NOFOLLOW));
  if (!opened.valid()) {
    int error = errno;
    if (auto st = entry(name); st && !S_ISDIR(st->st_mode)) refuse(path, st->st_mode);
    throw Error("cannot open directory '" + path + "': " + reason(error));
  }
  return Directory(std::move(opened), path);
}

std::string Directory::path_of(const std::string& name) const {
  if (path_.empty()) return name;
  return path_.back() == '/' ? path_ + name : path_ + "/" + name;
}

std::optional<struct stat> Directory::entry(const std::string& name) const {
  struct stat st {};
  if (::fstatat(fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
  return st;
}

std::vector<std::string> Directory::names() const {
  int copy = ::fcntl(fd(), F_DUPFD_CLOEXEC, 0);
  DIR* listing = copy < 0 ? nullptr : ::fdopendir(copy);
  if (listing == nullptr) {
    int error = errno;
    if (copy >= 0) ::close(copy);
    throw Error("cannot list directory '" + shown() + "': " + reason(error));
  }
  ::rewinddir(listing);  // the copy shares the offset of every earlier listing
  std::vector<std::string> out;
  while (const dirent* e = ::readdir(listing)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(std::move(name));
  }
  ::closedir(listing);
  return out;
}

void Directory::sync() const {
  if (::fsync(fd()) != 0) {
    throw Error("cannot fsync directory '" + shown() + "': " + reason(errno));
  }
}

}  // namespace cohort::files
