// An elastic cohortrun job: workers on the slots that host discovery (or a fixed host list) offers,
// grouped into numbered rounds through the protocol of elastic_protocol.h, regrouped when a worker
// fails, hosts come or go, or a worker finishes; the job ends when the workers of the current
// round have all finished, or with a message when ElasticHosts says it must stop.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "launcher/elastic_hosts.h"
#include "launcher/hosts.h"
#include "launcher/job_events.h"
#include "launcher/worker_launcher.h"
#include "launcher/worker_output.h"

namespace cohort::discovery {

struct ElasticJobOptions {
  std::vector<std::string> command;  // the worker program and its arguments
  // --host-discovery-script; without it, `fixed_hosts` is the host list for the whole job
  // (fault tolerance without scaling).
  std::optional<std::string> discovery_script;
  std::vector<HostSlots> fixed_hosts;
  std::chrono::milliseconds discovery_interval{1000};
  std::chrono::milliseconds discovery_timeout{10000};
  int slots_per_host = 1;
  ElasticHostsOptions hosts;  // min/max np, elastic timeout, reset limit, cooldowns
  // After a worker leaves its round (a failed collective, or an interrupt), how long the others
  // of the round get to check in before they are taken for failed and SIGKILLed.
  std::chrono::milliseconds checkin_timeout{10000};
  std::chrono::milliseconds term_grace{5000};
  std::chrono::milliseconds start_timeout{120000};  // the longest rendezvous wait, at least
  LaunchOptions launch;                             // ssh and the workers' network interface
  OutputOptions output;                             // where the workers' lines go
  JobEventsOptions events;                          // --event-log
};

// Runs the job to its end and returns cohortrun's exit status: 0 when every worker of the last
// round exited 0, 1 when the job had to stop (the reason is printed), 128+sig after SIGINT or
// SIGTERM. Throws InvalidArgument for options that cannot work.
int run_elastic_job(const ElasticJobOptions& options);

}  // namespace cohort::discovery
