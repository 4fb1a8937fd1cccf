// The planning of one round by the agent that won the right to plan it (its claim on
// planners/<round> in etcd, under its lease): wait for the last round's survivors to check in
// (giving up on those that do not within --checkin-timeout), wait for --nnodes MIN nodes
// (bounded by --elastic-timeout), then publish the round, or the job's stop, in one write.
// The round's record is the only commit point: each agent writes its own workers' assignments
// from it (agent_job.h), so a planner that dies at any moment leaves nothing half published, and
// the next claimant, once its lease has expired, starts over.
#pragma once

#include <optional>
#include <string>

#include "agent/agent_view.h"
#include "elastic_policy/node_rounds.h"
#include "launcher/clock.h"
#include "launcher/round_board.h"
#include "rendezvous/etcd_store.h"

namespace cohort::discovery {

struct PlanningLimits {
  int min_nodes = 1;
  int max_nodes = 1;
  std::optional<int> reset_limit;
  std::chrono::milliseconds checkin_timeout{10000};
  std::chrono::milliseconds elastic_timeout{600000};
};

// The limits the policy's node rounds take (elastic_policy/node_rounds.h).
elastic_policy::NodeRoundLimits node_round_limits(const PlanningLimits& limits);

class RoundPlanning {
 public:
  // Begins planning `round` because of `why` (the policy's round_needed,
  // elastic_policy/node_round_plan.h): the members still joining the last round stop (its abandon
  // key), and its members learn of it at their next commit (a host notice).
  RoundPlanning(int round, std::string why, rendezvous::EtcdStore& store, RoundBoard& board,
                const AgentSnapshot& snapshot, TimePoint now);

  int round() const { return round_; }
  // One step on a fresh snapshot; true once the round or the stop is published.
  bool step(const AgentSnapshot& snapshot, const PlanningLimits& limits, TimePoint now);
  // When step() next has something to do even if nothing changes in etcd, after `now`.
  std::optional<TimePoint> next_deadline(const PlanningLimits& limits, TimePoint now) const;
  // The record this planning published (format_agent_round), once step() has returned true;
  // nothing if another agent published the round.
  const std::optional<std::string>& published() const { return published_; }
  // The round's cause, as the planner's events name it (AgentEvents::noted_cause): written to
  // causes/<r> just before the round, so that every agent names the round as the planner does.
  void name_cause(std::string cause) { cause_ = std::move(cause); }

 private:
  void give_up_on(const std::vector<std::string>& workers, const std::string& why);
  void publish(const AgentRound& round);

  const int round_;
  const std::string why_;
  rendezvous::EtcdStore& store_;
  RoundBoard& board_;
  const TimePoint started_;
  bool killed_waiting_ = false;
  // The host notice raised for this round, which the snapshot it started from does not show yet:
  // the round's generation must include it, or its members would leave it at their first commit.
  int raised_notice_ = 0;
  std::optional<std::string> published_;
  std::string cause_;
};

// The agent's first-round last call (--rdzv-last-call, torchrun's last_call_timeout): rule 5
// (elastic_policy::LastCall) over the nodes ready in the job's view. Once MIN nodes are ready, the
// first round waits this long for more, unless MAX are there already. Without it, agents started
// together form the first round with whichever MIN registered first, and the rest join one reset
// later.
class AgentLastCall {
 public:
  AgentLastCall(std::chrono::milliseconds length, int max_nodes)
      : length_(length), max_(max_nodes), rule_(length, max_nodes) {}
  // Whether the first round may form now; `view` has MIN nodes ready for it.
  bool over(const AgentJobView& view, TimePoint now);
  // When it ends, once it has begun.
  std::optional<TimePoint> deadline() const { return rule_.deadline(); }

 private:
  const std::chrono::milliseconds length_;
  const int max_;
  elastic_policy::LastCall rule_;  // the rule itself (elastic_policy.h, rule 5)
};

// "[0] a.0.0 on a, [1] a.1.0 on a", for the log.
std::string describe_members(const AgentRound& round);

}  // namespace cohort::discovery
