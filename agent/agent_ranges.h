// Which of its job's keys an agent reads and watches in etcd (docs/agents.md, "How an agent reads
// etcd"). The agent that plans the job's rounds follows every key; the others only what they act
// on: the agents' records, the rounds and their claims, exits, kills, the job's marker, the host
// notices, rank 0's progress, and their own workers' check-ins and reset reports. So a check-in,
// an assignment or a data-plane key reaches one agent besides its worker's own, not all of them.
#pragma once

#include <string>
#include <vector>

#include "agent/agent_plan.h"
#include "rendezvous/etcd_store.h"

namespace cohort::discovery {

using KeyRanges = std::vector<rendezvous::KeyRange>;

// Every key of the job: what the planner reads.
KeyRanges planner_ranges();
// What the agent of `node` reads while it does not plan.
KeyRanges follower_ranges(const std::string& node);
// Whether the key ranges `ranges` hold every check-in of every worker: only then may an agent
// decide that a round is needed, or plan one.
bool holds_every_checkin(const KeyRanges& ranges);

// Whether the agent of `node` should follow every key: it is planning a round (`planning`), or its
// node is the first of the live agents' records by name, which makes it the one that sees when a
// round is needed. Any agent may still claim a round's planning (an etcd transaction decides),
// but only one that holds every check-in does.
bool plans_rounds(const AgentJobView& view, const std::string& node, bool planning);

}  // namespace cohort::discovery
