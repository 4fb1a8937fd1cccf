// cohortrun's agent mode (--rdzv-backend etcd): one agent per node, none in charge. Each agent
// registers its node in etcd under a lease, starts and supervises its node's workers, and takes
// part in forming each round: whichever agent first sees that a round is needed claims its
// planning (agent_planner.h), every agent writes its own workers' assignments from the published
// round, and the workers build their world through etcd as they would through cohortrun's
// server (rendezvous/elastic_protocol.h). docs/agents.md tells the whole story.
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

// The etcd key prefix of job `job_id`.
std::string agent_job_prefix(const std::string& job_id);

// Runs this node's part of the job to its end. Returns 0 when every worker of the job's last
// round exited 0, 1 when the job stopped (the reason is printed) or this node left it, 128+sig
// after SIGINT, SIGTERM or SIGHUP (at once when it comes while the agent waits for etcd at the
// start). Throws cohort::Error when etcd cannot be reached at the start.
int run_agent(const AgentOptions& options);

}  // namespace cohort::discovery
