// The rules of the elastic policy (elastic_policy.h) in agent mode's terms, where a node joins a
// round whole and the agent that won the right to plan a round decides it: the nodes' order, the
// first round's last call and how long the first round is waited for, when a round being planned
// forms, waits or stops the job, the node's own cooldown after a failure, and its drain.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "elastic_policy/elastic_policy.h"
#include "elastic_policy/node_round_plan.h"

namespace cohort::elastic_policy {

// Rule 4 for agent mode, where a node joins whole: the nodes of a round in the order their
// workers take ranks: `survivor_nodes` (the nodes of the last round's survivors, in their ranks'
// order, repeats allowed) first, then the other `nodes` in their given order; at most max_nodes.
std::vector<std::string> round_node_order(const std::vector<std::string>& survivor_nodes,
                                          const std::vector<std::string>& nodes, int max_nodes);

// Rule 5: the first round's last call.
class LastCall {
 public:
  LastCall(std::chrono::milliseconds length, int max_size) : length_(length), max_(max_size) {}
  // Whether the first round may form now that `ready` (at least MIN) are ready for it. The first
  // call starts the last call: began_now() then says so, once.
  bool over(int ready, TimePoint now);
  bool began_now() { return std::exchange(began_now_, false); }
  std::optional<TimePoint> deadline() const;

 private:
  const std::chrono::milliseconds length_;
  const int max_;
  std::optional<TimePoint> began_;
  bool began_now_ = false;
};

// Rules 2 and 3 for agent mode, on the agent's own node (an agent sees no other node's
// penalties, so it keeps its own clock): a failed worker takes the whole node out for
// penalty_after(range, failures), without jitter (the server mode spreads many hosts' returns
// with it; an agent has one node), or for good without a range. Until the
// cooldown is over the node starts no worker, and a record listing none would offer it to the
// next round, so it does not register one.
class NodeCooldown {
 public:
  explicit NodeCooldown(std::optional<CooldownRange> range) : range_(std::move(range)) {}
  // A worker of the node failed at `now`: how long the node sits out, or nothing: it leaves the
  // job (no --blacklist-cooldown-range).
  std::optional<std::chrono::milliseconds> failed(TimePoint now);
  int failures() const { return failures_; }
  // Whether the node may start workers at `now`; the first call past the cooldown ends it.
  bool may_start(TimePoint now);
  // Whether the node may publish a record listing `workers` running workers.
  bool may_register(std::size_t workers) const { return !until_ || workers > 0; }
  // When the cooldown ends (the agent wakes then), or nothing.
  std::optional<TimePoint> until() const { return until_; }

 private:
  const std::optional<CooldownRange> range_;
  int failures_ = 0;
  std::optional<TimePoint> until_;
};

// Rule 9 for agent mode, where a node drains whole: once one of its workers drained (it checked
// in as drained at a commit: its machine is going), the node takes no more work: it starts no
// worker and publishes no record (so the next round is planned without it), and its workers are
// told to exit; it leaves the job once none is left. Where the modes differ, and why: the server
// mode drains the drained worker's host and goes on with the other hosts (ElasticPolicy::drained);
// an agent is its node's only launcher, so it leaves with it.
class NodeDrain {
 public:
  // The first of the node's `workers` (in their order) that `drained` lists, when that begins the
  // node's drain; nothing when none drained or the node drains already.
  std::optional<std::string> begins(const std::vector<std::string>& workers,
                                    const std::set<std::string>& drained);
  bool draining() const { return draining_; }
  // Whether the node leaves the job now, with `workers_left` of its workers still there.
  bool leaves(std::size_t workers_left) const { return draining_ && workers_left == 0; }

 private:
  bool draining_ = false;
};

// Rule 7's "gone" in agent mode, where a node is gone when its agent's record (under the agent's
// lease) has vanished: the next round is planned without the last round's members on it. But
// records also vanish together when etcd loses every lease (frozen or cut off from every node for
// longer than the TTL), and then no node left: each agent registers again. So nodes without a
// record count as gone only while the planner's own lease holds, and not until etcd answers past a
// lease TTL after the planner itself registered again (the others do the same meanwhile).
class AbsentNodes {
 public:
  // This agent registered again with a new lease of `ttl` at `now`.
  void rejoined(TimePoint now, std::chrono::milliseconds ttl) { grace_until_ = now + ttl; }
  // etcd answered a read at `now`: the grace after a rejoin ends once `now` is past it.
  void answered(TimePoint now);
  // When the grace ends (the agent wakes then), or nothing.
  std::optional<TimePoint> grace_until() const { return grace_until_; }
  // Whether a round may be planned without the nodes absent_nodes(view) names: yes when it names
  // none; no during the grace; otherwise only if `own_lease_alive()` (asked only then) says the
  // planner's own lease holds.
  bool count_as_gone(const NodeJobView& view, const std::function<bool()>& own_lease_alive) const;

 private:
  std::optional<TimePoint> grace_until_;
};

// Agent mode's planning of one round, begun at `since` (rules 4 and 7).
struct PlanningState {
  bool survivors_waiting = false;  // a survivor of the last round has not checked in yet
  int nodes = 0;                   // the nodes the round would span
  bool a_worker_finished = false;
};

struct NodeRoundLimits {
  int min_nodes = 1;
  std::chrono::milliseconds checkin_timeout{10000};
  std::chrono::milliseconds elastic_timeout{600000};
};

struct PlanningDecision {
  enum class Kind { kWait, kForm, kStop } kind = Kind::kWait;
  // kWait for survivors: --checkin-timeout has passed, they are taken for failed.
  bool give_up_on_waiting = false;
  int needed = 1;  // the fewest nodes the round may have
};

// Rule 7 for agent mode's first round: an agent that started at `started` waits for MIN nodes
// until first_round_deadline(); past it, with `nodes` live and no round, the job stops for the
// reason this returns. Nothing while it may wait.
TimePoint first_round_deadline(const NodeRoundLimits& limits, TimePoint started);
std::optional<std::string> first_round_stop(int nodes, const NodeRoundLimits& limits,
                                            TimePoint started, TimePoint now);

// Waits for the survivors (giving up on them after --checkin-timeout), then for `needed` nodes
// (round_size_needed), for up to --elastic-timeout from `since`; then forms the round, or stops.
PlanningDecision decide_planning(const PlanningState& state, const NodeRoundLimits& limits,
                                 TimePoint since, TimePoint now);

}  // namespace cohort::elastic_policy
