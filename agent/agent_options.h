// The options of cohortrun's agent mode (agent_job.h: run_agent), apart so that the agent's
// parts include them without the agent itself.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "launcher/elastic_hosts.h"
#include "launcher/job_events.h"
#include "launcher/worker_output.h"
#include "rendezvous/etcd_client.h"

namespace cohort::discovery {

// What one agent runs with: its job, its node, the job's bounds and its timeouts.
struct AgentOptions {
  rendezvous::EtcdOptions etcd;  // --rdzv-endpoints and the TLS files; timeout bounds each request
  std::string job_id;            // --rdzv-id: keys under /cohort/<job_id>/
  std::string node;              // this node's name in the job (--node-name; default: hostname)
  std::string address;           // where its workers listen (--node-address)
  int min_nodes = 1;             // --nnodes MIN:MAX
  int max_nodes = 1;
  int nproc_per_node = 1;
  std::vector<std::string> command;
  std::string secret;  // raw bytes (COHORT_SECRET): every agent of the job has the same
  std::chrono::seconds lease_ttl{10};
  std::chrono::milliseconds checkin_timeout{10000};
  std::chrono::milliseconds elastic_timeout{600000};
  std::chrono::milliseconds last_call{0};  // --rdzv-last-call
  std::chrono::milliseconds start_timeout{120000};
  std::chrono::milliseconds term_grace{5000};
  std::optional<int> reset_limit;
  OutputOptions output;                   // where the workers' lines go
  JobEventsOptions events;                // --event-log (its job id and node are the two above)
  std::optional<CooldownRange> cooldown;  // none: a node whose worker failed leaves the job
  // For tests (COHORT_FAULT_AGENT_KILL_AT=ROUND:MARKER): the first agent to claim the planning
  // of `round` that creates the file `marker` SIGKILLs itself there, before publishing anything.
  struct KillWhenPlanning {
    int round = 0;
    std::string marker;
  };
  std::optional<KillWhenPlanning> kill_when_planning;
};

}  // namespace cohort::discovery
