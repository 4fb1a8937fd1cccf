// The job's lead (docs/agents.md, "How an agent reads etcd"): which agent plans the job's rounds,
// and so reads every key of the job while the others read only what they act on
// (agent_ranges.h). The lead is one key, lead_key, holding the node of the agent that created it
// under its lease; an agent whose node is registered takes it when it finds it unset (etcd's
// transaction lets one in), and gives it up when its node leaves the job. An agent that dies
// gives it up with its lease, a lease TTL later, as it gives up its claims on rounds.
#include "agent/agent.h"
#include "agent/agent_records.h"
#include "base/log.h"

namespace cohort::discovery {

void Agent::take_lead(const AgentSnapshot& s) {
  if (s.lead || stopping_ || drain_.draining() || !s.view.nodes.contains(options_.node)) return;
  if (!store_.create(lead_key(), options_.node, lease_->id())) return;
  log::info("agent: node ", options_.node, " takes the job's lead: it plans the job's rounds");
  dirty_ = true;  // acted on once the watch brings the key back (behind_own_write)
}

void Agent::release_lead() {
  if (store_.remove_if_holds(lead_key(), options_.node)) {
    log::info("agent: node ", options_.node, " gives up the job's lead");
  }
}

int Agent::count_nodes(const AgentSnapshot& s) {
  if (s.every_node) return static_cast<int>(s.view.nodes.size());
  return static_cast<int>(store_.list(std::string("agents/")).values.size());
}

}  // namespace cohort::discovery
