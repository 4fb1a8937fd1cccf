// cohortrun's agent mode (--rdzv-backend etcd): one agent per node, none in charge. Each agent
// registers its node in etcd under a lease, starts and supervises its node's workers, and takes
// part in forming each round: whichever agent first sees that a round is needed claims its
// planning (agent_planner.h), every agent writes its own workers' assignments from the published
// round, and the workers build their world through etcd as they would through cohortrun's
// server (rendezvous/elastic_protocol.h). docs/agents.md tells the whole story.
#pragma once

#include <string>

#include "agent/agent_options.h"

namespace cohort::discovery {

// The etcd key prefix of job `job_id`.
std::string agent_job_prefix(const std::string& job_id);

// Runs this node's part of the job to its end. Returns 0 when every worker of the job's last
// round exited 0, 1 when the job stopped (the reason is printed) or this node left it, 128+sig
// after SIGINT, SIGTERM or SIGHUP (at once when it comes while the agent waits for etcd at the
// start). Throws cohort::Error when etcd cannot be reached at the start.
int run_agent(const AgentOptions& options);

}  // namespace cohort::discovery
