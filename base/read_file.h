// How Cohort reads a file: the one facility behind cohortrun's inputs (hostfiles, the MPI
// Operator's OMPI_MCA_orte_default_hostfile, the etcd TLS files) and the checkpoints' reader.
//   - read_bounded(): a whole small file, at most a cap per kind of file (ReadRule). Links are
//     followed (Kubernetes mounts a ConfigMap or a Secret as links), but what the path leads to
//     is looked at before it is opened: only a regular file, and a pipe where the rule allows
//     one (`--hostfile <(...)`), is opened; /dev/zero, a directory or a socket is refused at
//     once. A file larger than the cap is refused before a byte is read, a pipe after the cap's
//     bytes; a pipe's writer must finish within the rule's timeout. Nothing larger than the cap
//     is ever allocated.
//   - open_regular(): a regular file in a directory, by its own name (never through a link),
//     opened without blocking, for a reader that reads it in bounded steps itself.
// docs/operations.md, "Files cohortrun reads".
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/directory.h"
#include "base/fd.h"

namespace cohort::files {

// The rule for one kind of file.
struct ReadRule {
  const char* what;    // the messages' name for it: "hostfile"
  size_t max_bytes;    // its cap: more is refused
  bool pipes = false;  // a FIFO or a pipe is read too (to its end, within pipe_timeout)
  std::chrono::milliseconds pipe_timeout{10000};
};

// The contents of `path`. Throws RefusedFile naming the path, what it is and the cap ("hostfile
// '/dev/zero' is a character device; a hostfile is read only from a regular file or a pipe, of at
// most 1 MiB"), or for more bytes than the cap; Error naming the path with the system's reason
// when it cannot be opened or read.
std::string read_bounded(const std::string& path, const ReadRule& rule);

// "1 MiB", "64 KiB" or "100 bytes": a cap in messages and docs.
std::string size_text(size_t bytes);

struct RegularFile {
  Fd fd;
  uint64_t size = 0;  // when it was opened
};
// `dir`/`name` open for reading. Throws RefusedFile naming the path and what it is when it is not
// a regular file (a link is not followed, a FIFO never waited on, a device never opened), Error
// with the system's reason when it cannot be opened.
RegularFile open_regular(const Directory& dir, const std::string& name);

}  // namespace cohort::files
