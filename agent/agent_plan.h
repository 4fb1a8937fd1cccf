// What agent mode reads off the view of the job the agents publish in etcd (agent/agent_records.h),
// beside the policy's decisions on it (elastic_policy/node_round_plan.h: whether a round is needed,
// who is in it, whether the job is done, which nodes are absent): the entry a worker checks in
// with. Pure: no store, no clock, no processes.
#pragma once

#include <set>
#include <string>

#include "agent/agent_records.h"

namespace cohort::discovery {

// What the agents have published of the job (the policy decides on it: node_round_plan.h).
using AgentJobView = elastic_policy::NodeJobView;

// The entry `worker` checks in with next: one past its entry in the last round, or 0 if it was not
// in it (a new worker; a worker dropped from a round is told to exit).
int next_entry(const AgentJobView& view, const std::string& worker);

}  // namespace cohort::discovery
