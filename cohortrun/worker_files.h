// The files a job's workers write that cohortrun checks on its own host before any worker starts:
// COHORT_TIMELINE (rank 0's timeline), from cohortrun's environment, -x or --timeline-filename.
// A path rank 0 could not write (a symbolic link, a FIFO, a device, a directory, a missing or
// read-only directory) then stops cohortrun at once with exit status 2, naming it, instead of
// every worker failing in init(). The check is base/safe_write.h's, the one rank 0's timeline
// makes before it writes, and it writes nothing. docs/operations.md, "Files Cohort writes".
#pragma once

#include <string>
#include <vector>

#include "launcher/hosts.h"

namespace cohort::discovery {

// Whether rank 0 may run on this host: one of `hosts` (those that may hold rank 0) is this host.
bool rank0_may_run_here(const std::vector<HostSlots>& hosts);

// Checks COHORT_TIMELINE, if set, as rank 0 would write it on this host. `flag_given`: it came
// from --timeline-filename, which the error then names. Throws InvalidArgument.
void check_worker_files(bool flag_given);

}  // namespace cohort::discovery
