// A static cohortrun job: a fixed host list, one rendezvous server, one supervisor, all workers
// started at once and the job over when they all end or one fails.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "launcher/host_manager.h"
#include "launcher/job_events.h"
#include "launcher/worker_launcher.h"
#include "launcher/worker_output.h"

namespace cohort::discovery {

struct StaticJobOptions {
  int np = 0;                        // 0: every slot
  std::vector<std::string> command;  // the worker program and its arguments
  std::chrono::milliseconds term_grace{5000};
  std::chrono::milliseconds start_timeout{120000};  // the longest rendezvous wait
  LaunchOptions launch;                             // ssh and the workers' network interface
  OutputOptions output;                             // where the workers' lines go
  JobEventsOptions events;                          // --event-log
};

// Runs the job to its end and returns cohortrun's exit status (0 when every worker exited 0).
// Throws InvalidArgument for a job that cannot be placed or started.
int run_static_job(const HostManager& hosts, const StaticJobOptions& options);

}  // namespace cohort::discovery
