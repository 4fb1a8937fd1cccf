// The process's descriptor limit (RLIMIT_NOFILE) for what holds a descriptor per rank: rank 0's
// control and heartbeat stars hold one per other rank each, more than the common soft limit of
// 1,024 once a job has a few hundred ranks.
#pragma once

#include <cstddef>
#include <string>

namespace cohort {

// Makes room for `more` descriptors beside those open now: raises the soft RLIMIT_NOFILE to the
// hard limit when the soft one is too low. Throws InvalidArgument naming the limit, and `what`
// needs them, when even the hard limit is too low; the limit is unchanged then.
void reserve_descriptors(size_t more, const std::string& what);

// Descriptors this process has open.
size_t open_descriptors();

}  // namespace cohort
