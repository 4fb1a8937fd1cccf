// How Cohort writes a file: the one facility behind the timeline, the checkpoints, the event log,
// the metrics file and the workers' output files. Whoever can write to the directory of such a
// file must not be able to make Cohort block or write elsewhere, even when it runs as root:
//   - a symbolic link is never followed at the file's name (O_NOFOLLOW, or a new file of a fresh
//     name renamed over it), and what is there is looked at before anything is opened;
//   - open() never blocks (O_NONBLOCK: a FIFO, with or without a reader, is refused at once);
//   - only regular files are written: a FIFO, a device (/dev/null), a directory or a socket at
//     the name is refused with RefusedFile naming the path, and nothing is written;
//   - a file rewritten whole is written to a new file of a fresh name in the same directory
//     (O_CREAT | O_EXCL), then renamed over its name, so it is never truncated in place.
// The directories above the name are the operator's and are resolved as usual (base/directory.h
// says what holds for a directory Cohort writes into). docs/operations.md, "Files Cohort writes".
#pragma once

#include <sys/types.h>

#include <span>
#include <string>
#include <string_view>

#include "base/directory.h"
#include "base/fd.h"

namespace cohort::files {

// Opens `dir`/`name` to append to it, creating it if absent (0644 before the umask). Writes on
// the descriptor block as usual. Throws RefusedFile ("'P' is a FIFO; Cohort writes only regular
// files") or Error with the system's reason, both naming the path.
Fd open_append(const Directory& dir, const std::string& name);
Fd open_append(const std::string& path);

// Throws RefusedFile when `dir`/`name` exists and is not a regular file: what ReplacingFile
// refuses before it writes anything, for a check before a job starts.
void check_replaceable(const Directory& dir, const std::string& name);
// The same for `path`, whose directory must exist and be writable (Error otherwise).
void check_replaceable(const std::string& path);

struct ReplaceOptions {
  mode_t mode = 0644;       // the new file's, before the umask
  bool exact_mode = false;  // the mode regardless of the umask (a file other users must read)
  // The temporary file's name. Empty: NAME.tmp.XXXXXX, a fresh one; else this name, a leftover
  // of which is removed first (crashed writers' leftovers are then found by their name).
  std::string temp_name;
};

// A file that takes the place of `dir`/`name` whole: created under a temporary name in the same
// directory (O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, checked with fstat), written, then
// renamed over `name` by publish(). `dir` must outlive it.
class ReplacingFile {
 public:
  // Throws RefusedFile, writing nothing, when `name` exists and is not a regular file; Error when
  // the temporary file cannot be made.
  ReplacingFile(const Directory& dir, std::string name, ReplaceOptions options = {});
  // Removes the temporary file unless it was published.
  ~ReplacingFile();
  ReplacingFile(const ReplacingFile&) = delete;
  ReplacingFile& operator=(const ReplacingFile&) = delete;

  int fd() const { return fd_.get(); }
  std::string temp_path() const { return dir_.path_of(temp_); }
  std::string path() const { return dir_.path_of(name_); }

  // Writes all of `bytes` at the end (EINTR and short writes retried). Throws Error naming the
  // temporary file.
  void write(std::span<const std::byte> bytes);
  void write(std::string_view text) { write(std::as_bytes(std::span(text.data(), text.size()))); }
  // Closes the descriptor (a deferred write error, as NFS reports them, is an Error naming the
  // temporary file); publish() may follow.
  void close();
  // Renames the temporary file over `name`; refused (RefusedFile) if `name` has meanwhile become
  // something else than a regular file. The descriptor, unless closed, stays open on the file, now
  // under `name`.
  void publish();
  // After publish(): the descriptor, still open for writing on the file under `name`.
  Fd release();

 private:
  const Directory& dir_;
  std::string name_, temp_;
  Fd fd_;
  bool published_ = false;
};

// Replaces `path` with `text` for every reader at once (ReplacingFile, published).
void write_file_atomically(const std::string& path, std::string_view text,
                           ReplaceOptions options = {});

// Writes all of `bytes` to `fd` (EINTR and short writes retried); throws Error naming `path`.
void write_all(int fd, std::span<const std::byte> bytes, const std::string& path);

}  // namespace cohort::files
