// What a file system entry is, in words ("a symbolic link", "a FIFO", ...), and the error raised
// where Cohort refuses an entry for what it is. Every reader and writer of files in the project
// (base/safe_write.h, base/bounded_read.h, base/directory.h, state/durable_file.h) names a
// refused entry through kind_of(), so that one entry is named alike wherever it is refused.
#pragma once

#include <sys/types.h>

#include "cohort/errors.h"

namespace cohort::files {

// "a symbolic link", "a FIFO", "a character device", "a block device", "a directory",
// "a socket", "a regular file", or "of an unknown kind".
const char* kind_of(mode_t mode);

// A path refused for what it is (not a regular file where one is written or read, not a
// directory where files are written into one, larger than its cap), before anything was written
// there or read from it. The message names the path.
class RefusedFile : public Error {
 public:
  using Error::Error;
};

}  // namespace cohort::files
