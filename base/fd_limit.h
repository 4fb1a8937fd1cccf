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

// Raises the soft RLIMIT_NOFILE towards `total` descriptors, as far as the hard limit allows, and
// never lowers it. Returns the soft limit now (RLIM_INFINITY when unlimited). The one place that
// changes the limit: rank 0's stars (reserve_descriptors) and the rendezvous server
// (rendezvous/server_loop.cc) both come through it. Processes started afterwards inherit it.
unsigned long raise_soft_descriptor_limit(unsigned long total);

// Descriptors this process has open.
size_t open_descriptors();

}  // namespace cohort
