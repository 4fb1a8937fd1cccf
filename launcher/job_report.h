// How a cohortrun job speaks to its user on stderr, whatever the log level: errors as
// "cohortrun: ..." (as for bad arguments), and elastic events as "[cohortrun] ..." lines (users
// need to see resets). Each message is one write(2), so it never interleaves with worker output.
#pragma once

#include <string>

namespace cohort::discovery {

// Writes all of `text` to `fd`, retrying short writes; gives up silently when `fd` is gone.
void write_all(int fd, const std::string& text);

// "cohortrun: <message>": something failed or the job is stopping.
void report(const std::string& message);
// "[cohortrun] <message>": an event of an elastic job (a round, a failure, a host change).
void announce(const std::string& message);

// "exited with status 3" or "was killed by signal 9 (SIGKILL)".
std::string describe_exit(int status);

}  // namespace cohort::discovery
