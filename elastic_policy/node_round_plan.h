// Rule 4 of the elastic policy (elastic_policy.h) for agent mode, on what the agents publish of
// the job (agent/agent_records.h keeps these shapes in etcd): when a round after the last one is
// needed, and who is in it at which rank. Pure: no store, no clock, no processes; the agent reads
// etcd, calls these, and writes what they say.
//
// Where the modes differ, and why: the server-mode job sees every worker and decides slot by slot
// (ElasticPolicy::decide_round); an agent sees the nodes' records, so a node joins a round whole,
// a round ends when one of its members checks in again or its agent stops listing it, and a
// survivor is a member whose agent still lists it and that did not drain.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace cohort::elastic_policy {

// What an agent tells the others about its node.
struct NodeOffer {
  int slots = 1;
  std::vector<std::string> workers;  // running, in slot order
  bool operator==(const NodeOffer&) const = default;
};

struct NodeMember {
  std::string worker;
  std::string node;
  int entry = 0;  // the worker's entry into this round (its check-in number)
  bool operator==(const NodeMember&) const = default;
};

// A round as its planner published it, or the job's end.
struct NodeRound {
  int generation = 0;               // the host-notice generation the round was planned at
  std::vector<NodeMember> members;  // by rank
  std::optional<std::string> stop;  // set: the job must stop, for this reason
  bool operator==(const NodeRound&) const = default;
};

// What the agents have published of the job.
struct NodeJobView {
  std::map<std::string, NodeOffer> nodes;  // the live agents (their lease holds), by node
  int last_round_number = -1;              // -1: no round yet
  std::optional<NodeRound> last_round;
  std::map<std::string, std::set<int>> checkins;  // worker -> the entries it checked in with
  std::set<std::string> finished;                 // workers that exited 0
  std::set<std::string> drained;                  // workers that checked in as drained
};

// Why a round after the last one is needed now, or nothing. The first round is needed once
// `min_nodes` agents are live and every one of their workers has checked in; a later one once a
// member of the last round left it (checked in again) or is gone (its agent no longer lists it).
// A member that finished (exited 0) is neither: the others leave the round when they notice.
std::optional<std::string> round_needed(const NodeJobView& view, int min_nodes);

struct NodePlanOptions {
  int min_nodes = 1;
  int max_nodes = 1 << 20;
  std::optional<int> reset_limit;  // rounds after the first; none: unlimited
  int generation = 0;              // the host-notice generation now
};

struct NodePlan {
  NodeRound round;                   // the next round, or a stop
  std::vector<std::string> waiting;  // survivors not yet checked in: plan again when they have
  std::vector<std::string> dropped;  // survivors left out (beyond max_nodes): assign them exit
};

// The next round: the survivors of the last one (its members still listed that did not drain) in
// their old rank order, then the checked-in new workers (each at its latest check-in's entry) node
// by node (round_node_order: survivors' nodes first, then the others by name), each node whole, up
// to max_nodes nodes; a node's ranks consecutive (group_by_host, launcher/host_groups.h): a new
// worker on a survivor's node takes its rank after that node's survivors. A stop when the reset
// limit is exceeded (rule 6). Check `waiting` (non-empty: not yet) and the round's nodes against
// decide_planning before publishing.
NodePlan plan_node_round(const NodeJobView& view, const NodePlanOptions& options);

// How many nodes `round` spans.
int nodes_in(const NodeRound& round);

// Rule 10 for agent mode: the job is done once every member of the last round finished (exited
// 0); a stop is not a finish.
bool node_job_done(const NodeJobView& view);

// Rules 4 and 10 for a node's new workers: whether `node` may start workers on its free slots now.
enum class NodeStart {
  kStart,
  kFinishing,  // a worker finished: the job is finishing, nothing new starts
  kRoundFull,  // `node` is not in the last round, which has max_nodes nodes: it waits
};
NodeStart node_may_start(const NodeJobView& view, const std::string& node, int max_nodes);

// The nodes of the last round's unfinished members that no agent's record lists: gone, or
// registering again after etcd lost their records (AbsentNodes, node_rounds.h, tells which).
std::set<std::string> absent_nodes(const NodeJobView& view);

}  // namespace cohort::elastic_policy
