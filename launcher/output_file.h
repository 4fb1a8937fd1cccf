// The files cohortrun writes (--event-log, --metrics-file, --output-filename's files per rank),
// opened so that whoever can write to their directory cannot make cohortrun block or write
// elsewhere: never through a symbolic link, never blocking in open() (a FIFO without a reader),
// and only regular files. docs/operations.md, "Output files", says what is refused.
#pragma once

#include <string>

#include "base/fd.h"

namespace cohort::discovery {

// Opens `path` to append to it, creating it (mode 0644) if absent; blocking writes. Throws
// cohort::Error naming the path and what it is where it is not a regular file (a symbolic link, a
// FIFO, a device, a directory, a socket), or the system's reason.
Fd open_append_file(const std::string& path);

// Replaces the contents of `path` with `text` at once for every reader: writes a new file of a
// unique name next to it (`path`.tmp.XXXXXX, created with O_EXCL, mode 0644), then renames it
// over `path`. A `path` that exists and is not a regular file is refused, and nothing is written.
// Throws cohort::Error naming the file.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace cohort::discovery
