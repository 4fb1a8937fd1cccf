// The signals a cohortrun job handles itself: SIGCHLD (a child exited); SIGINT, SIGTERM and
// SIGHUP, which stop the job and are forwarded to every worker; SIGUSR1 and SIGUSR2, which are
// only passed on to every worker (Slurm sends them ahead of preemption; what they mean is the
// training program's business). They arrive on a signalfd, so the job's event loop sleeps in
// poll() on them.
#pragma once

#include <csignal>
#include <vector>

#include "base/fd.h"
#include "launcher/worker_group.h"

namespace cohort::discovery {

// SIGINT, SIGTERM and SIGHUP: the signals that stop the job.
sigset_t stop_signal_set();

// Blocks those signals in the calling thread (call before starting any thread or
// worker), ignores SIGPIPE, and returns a signalfd that receives them.
Fd block_job_signals();

// Drains the signalfd: passes SIGUSR1 and SIGUSR2 on to `workers` at once, and returns the
// signals that stop the job, in arrival order. A SIGCHLD needs no answer of its own: the caller
// reaps its children by pid after every wake-up.
std::vector<int> read_job_signals(int signal_fd, WorkerGroup& workers);

}  // namespace cohort::discovery
