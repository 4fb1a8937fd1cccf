// What agent mode decides from what the agents read in etcd (agent/agent_records.h): whether
// a new round is needed, and who is in it at which rank. Pure: no store, no clock, no processes;
// the agent's loop reads, calls these, and writes what they say.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/agent_records.h"

namespace cohort::discovery {

struct AgentJobView {
  std::map<std::string, AgentNode> nodes;  // the live agents (their lease holds), by node
  int last_round_number = -1;              // -1: no round yet
  std::optional<AgentRound> last_round;
  std::map<std::string, std::set<int>> checkins;  // worker -> the entries it checked in with
  std::set<std::string> finished;                 // workers that exited 0
  std::set<std::string> drained;                  // workers that checked in as drained
};

// The entry `worker` checks in with next: one past its entry in the last round, or 0 if it was not
// in it (a new worker; a worker dropped from a round is told to exit).
int next_entry(const AgentJobView& view, const std::string& worker);

// The last round's members have all finished: the job is done.
bool job_finished(const AgentJobView& view);

// Why a round after the last one is needed now, or nothing. The first round is needed once
// `min_nodes` agents are live and every one of their workers has checked in; a later one once a
// member of the last round left it (checked in again) or is gone (its agent no longer lists it).
// A member that finished (exited 0) is neither: the others leave the round when they notice.
std::optional<std::string> round_needed(const AgentJobView& view, int min_nodes);

// The nodes of the last round's unfinished members that have no record (agents/<node>): gone,
// or registering again after etcd lost their records.
std::set<std::string> absent_nodes(const AgentJobView& view);

struct AgentPlanOptions {
  int min_nodes = 1;
  int max_nodes = 1 << 20;
  std::optional<int> reset_limit;  // rounds after the first; none: unlimited
  int generation = 0;              // the host-notice generation now
};

struct AgentPlan {
  AgentRound round;                  // the next round, or a stop
  std::vector<std::string> waiting;  // survivors not yet checked in: plan again when they have
  std::vector<std::string> dropped;  // survivors left out (beyond max_nodes): assign them exit
};

// The next round: the survivors of the last one in their old rank order, then the checked-in new
// workers (each at its latest check-in's entry) node by node (survivors' nodes first, then the
// others by name), each node whole, up to max_nodes nodes. A stop when the reset limit is exceeded.
// Check `waiting` (non-empty: not yet) and round.members against min_nodes before publishing.
AgentPlan plan_agent_round(const AgentJobView& view, const AgentPlanOptions& options);

// How many nodes `round` spans.
int nodes_in(const AgentRound& round);

}  // namespace cohort::discovery
