#include "agent/agent_planner.h"

#include <algorithm>

#include "agent/agent_round_guard.h"
#include "base/log.h"
#include "elastic_policy/node_round_plan.h"
#include "elastic_policy/node_rounds.h"
#include "launcher/job_report.h"
#include "launcher/seconds_text.h"

namespace cohort::discovery {

elastic_policy::NodeRoundLimits node_round_limits(const PlanningLimits& limits) {
  return {.min_nodes = limits.min_nodes,
          .checkin_timeout = limits.checkin_timeout,
          .elastic_timeout = limits.elastic_timeout};
}

RoundPlanning::RoundPlanning(int round, std::string why, rendezvous::EtcdStore& store,
                             RoundBoard& board, const AgentSnapshot& snapshot, TimePoint now)
    : round_(round), why_(std::move(why)), store_(store), board_(board), started_(now) {
  announce("planning round " + std::to_string(round_) + ": " + why_);
  if (round_ == 0) return;
  int last = round_ - 1;
  board_.abandon(last, why_);
  raised_notice_ = (snapshot.view.last_round ? snapshot.view.last_round->generation : 0) + 1;
  board_.notice(raised_notice_, why_);
}

bool RoundPlanning::step(const AgentSnapshot& snapshot, const PlanningLimits& limits,
                         TimePoint now) {
  if (snapshot.view.last_round_number >= round_) return true;  // published (by us, or before)
  auto plan = elastic_policy::plan_node_round(
      snapshot.view, {.min_nodes = limits.min_nodes,
                      .max_nodes = limits.max_nodes,
                      .reset_limit = limits.reset_limit,
                      .generation = std::max(snapshot.generation, raised_notice_)});
  if (plan.round.stop) {
    publish(plan.round);
    return true;
  }
  give_up_on(plan.dropped, "it is beyond --nnodes' most nodes");
  using Kind = elastic_policy::PlanningDecision::Kind;
  auto decision =
      elastic_policy::decide_planning({.survivors_waiting = !plan.waiting.empty(),
                                       .nodes = elastic_policy::nodes_in(plan.round),
                                       .a_worker_finished = !snapshot.view.finished.empty()},
                                      node_round_limits(limits), started_, now);
  if (!plan.waiting.empty()) {
    if (!killed_waiting_ && decision.give_up_on_waiting) {
      killed_waiting_ = true;
      give_up_on(plan.waiting, "it did not check in within --checkin-timeout " +
                                   seconds_text(limits.checkin_timeout) + " after round " +
                                   std::to_string(round_ - 1) + " broke up");
    }
    return false;  // its agent kills it and stops listing it, or its lease expires
  }
  // Once a worker has finished, the rest of its round may finish with fewer than MIN nodes.
  if (decision.kind == Kind::kWait) return false;
  if (decision.kind == Kind::kStop) {
    plan.round.stop = "round " + std::to_string(round_) + " had fewer than " +
                      std::to_string(decision.needed) + " nodes ready for --elastic-timeout " +
                      seconds_text(limits.elastic_timeout);
  }
  publish(plan.round);
  return true;
}

std::optional<TimePoint> RoundPlanning::next_deadline(const PlanningLimits& limits,
                                                      TimePoint now) const {
  for (TimePoint t : {started_ + limits.checkin_timeout, started_ + limits.elastic_timeout}) {
    if (t > now) return t;
  }
  return std::nullopt;
}

void RoundPlanning::give_up_on(const std::vector<std::string>& workers, const std::string& why) {
  for (const auto& worker : workers) {
    announce("giving up on worker " + worker + ": " + why + "; its agent kills it");
    store_.create(kill_key(worker), why, 0);
  }
}

void RoundPlanning::publish(const AgentRound& round) {
  std::string record = format_agent_round(round);
  if (!cause_.empty()) store_.create(cause_key(round_), cause_, 0);  // the first planner's stays
  if (!publish_round_record(store_, round_, record)) {
    log::info("round ", round_, " was published by another agent");
    return;
  }
  published_ = std::move(record);
  if (round.stop) {
    announce("round " + std::to_string(round_) + ": the job stops: " + *round.stop);
    return;
  }
  announce("round " + std::to_string(round_) + " (" + why_ + "): size " +
           std::to_string(round.members.size()) + ": " + describe_members(round));
}

bool AgentLastCall::over(const AgentJobView& view, TimePoint now) {
  int nodes = static_cast<int>(view.nodes.size());
  bool over = rule_.over(nodes, now);
  if (rule_.began_now()) {
    announce(std::to_string(nodes) + " of at most " + std::to_string(max_) +
             " nodes are ready; the first round waits up to --rdzv-last-call " +
             seconds_text(length_) + " for more");
  }
  return over;
}

std::string describe_members(const AgentRound& round) {
  std::string out;
  for (size_t i = 0; i < round.members.size(); ++i) {
    const auto& m = round.members[i];
    out += (i ? ", [" : "[") + std::to_string(i) + "] " + m.worker + " on " + m.node;
  }
  return out;
}

}  // namespace cohort::discovery
