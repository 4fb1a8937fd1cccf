// Which of its job's keys an agent reads and watches in etcd (docs/agents.md, "How an agent reads
// etcd"). The agent that plans the job's rounds (the one that holds the job's lead key) follows
// every key; the others only what they act on: their own node's record, the rounds and their
// claims and causes, exits, kills, the job's marker and lead, the host notices, rank 0's progress,
// and their own workers' check-ins and reset reports. So a node's record, a check-in, an
// assignment or a data-plane key reaches one agent besides its own, not all of them: the members
// of a round reach the others in the round's record, which the planner publishes.
#pragma once

#include <optional>
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
// What the agent of `node` reads when it starts: follower_ranges, and its node's workers'
// assignments. Every key or value that names a worker of `node` is there (its record, the rounds,
// its workers' protocol keys, exits and kills), for its first spawns (agent_name.h), without the
// other nodes' records and workers' keys.
KeyRanges startup_ranges(const std::string& node);
// Whether the key ranges `ranges` hold every check-in of every worker: only then may an agent
// decide that a round is needed, or plan one.
bool holds_every_checkin(const KeyRanges& ranges);
// Whether the key ranges `ranges` hold every node's record (agents/).
bool holds_every_node(const KeyRanges& ranges);

// Whether the agent of `node` should follow every key: it is planning a round (`planning`), or it
// holds the job's lead (`lead`, the lead key's value), which makes it the one that sees when a
// round is needed. An agent takes the lead when it finds none (the first to create the key under
// its lease; it goes with that lease, or when its agent stops). Any agent may still claim a
// round's planning (an etcd transaction decides), but only one that holds every check-in does.
bool plans_rounds(const std::optional<std::string>& lead, const std::string& node, bool planning);

}  // namespace cohort::discovery
