// A directory held open, so that what Cohort writes in it is created, renamed, listed and removed
// relative to it (openat, renameat, unlinkat): a link planted at its path after it was opened
// changes nothing. A directory Cohort is told to write into is opened by its own name: the
// directories above it are resolved as the system resolves them (they are the operator's), but
// its last component must be a directory itself, never a symbolic link to one, so that nobody who
// can write next to it can send the files elsewhere. docs/operations.md, "Files Cohort writes".
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/fd.h"

namespace cohort::files {

class Directory {
 public:
  enum class Create : bool { kNo, kYes };

  // The directory `path` names; with Create::kYes, made first where missing (0755 before the
  // umask), with the directories above it. Throws RefusedFile naming the path when it is not a
  // directory (a symbolic link, a FIFO, a device, a file, ...), Error with the system's reason
  // when it cannot be made or opened.
  static Directory open(const std::string& path, Create create);
  // As open(path, Create::kNo), but nothing when `path` does not exist.
  static std::optional<Directory> open_if_exists(const std::string& path);
  // The directory of the file `path` names, open, and the file's name in it: where that file is
  // written, relative to the directory and never through a link at its name. Throws
  // InvalidArgument for a path that names no file ("", "dir/", "." or ".."), Error when the
  // directory cannot be opened.
  static std::pair<Directory, std::string> of_file(const std::string& path);

  // The directory `name` inside this one, by its own name (never through a link); with
  // Create::kYes, made first if missing. Throws as open().
  Directory child(const std::string& name, Create create) const;

  int fd() const { return fd_.get(); }
  // As given; empty for the working directory that of_file() takes for a bare file name.
  const std::string& path() const { return path_; }
  // The path of `name` inside this directory, for messages.
  std::string path_of(const std::string& name) const;
  // The entry `name` itself (lstat: a link is not followed); nothing if it does not exist.
  std::optional<struct stat> entry(const std::string& name) const;
  // The names of its entries, "." and ".." left out, in no particular order.
  std::vector<std::string> names() const;
  // fsync(2) of the directory, so that a rename in it is durable. Throws Error naming it.
  void sync() const;

 private:
  Directory(Fd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  std::string shown() const { return path_.empty() ? "." : path_; }

  Fd fd_;
  std::string path_;
};

}  // namespace cohort::files
