// The signals a cohortrun job handles itself: SIGCHLD (a child exited), SIGINT and SIGTERM (stop
// the job). They arrive on a signalfd, so the job's event loop sleeps in poll() on them.
#pragma once

#include <vector>

#include "base/fd.h"

namespace cohort::discovery {

// Blocks SIGCHLD, SIGINT and SIGTERM in the calling thread (call before starting any thread or
// worker), ignores SIGPIPE, and returns a signalfd that receives them.
Fd block_job_signals();

// Drains the signalfd; returns the signals other than SIGCHLD, in arrival order. A SIGCHLD needs
// no answer of its own: the caller reaps its children by pid after every wake-up.
std::vector<int> read_job_signals(int signal_fd);

}  // namespace cohort::discovery
