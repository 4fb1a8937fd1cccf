#include "elastic_policy/node_rounds.h"

#include <algorithm>

#include "launcher/seconds_text.h"

namespace cohort::elastic_policy {

std::vector<std::string> round_node_order(const std::vector<std::string>& survivor_nodes,
                                          const std::vector<std::string>& nodes, int max_nodes) {
  std::vector<std::string> order;
  for (const auto* list : {&survivor_nodes, &nodes}) {
    for (const auto& node : *list) {
      if (std::find(order.begin(), order.end(), node) == order.end()) order.push_back(node);
    }
  }
  if (static_cast<int>(order.size()) > max_nodes) order.resize(std::max(max_nodes, 0));
  return order;
}

bool LastCall::over(int ready, TimePoint now) {
  if (ready >= max_) return true;
  if (!began_) {
    began_ = now;
    began_now_ = length_.count() > 0;
  }
  return now >= *began_ + length_;
}

std::optional<TimePoint> LastCall::deadline() const {
  if (!began_) return std::nullopt;
  return *began_ + length_;
}

std::optional<std::chrono::milliseconds> NodeCooldown::failed(TimePoint now) {
  auto wait = penalty_after(range_, ++failures_);
  if (wait) until_ = now + *wait;
  return wait;
}

bool NodeCooldown::may_start(TimePoint now) {
  if (until_ && now < *until_) return false;
  until_.reset();
  return true;
}

std::optional<std::string> NodeDrain::begins(const std::vector<std::string>& workers,
                                             const std::set<std::string>& drained) {
  if (draining_) return std::nullopt;
  auto first = std::find_if(workers.begin(), workers.end(),
                            [&](const std::string& w) { return drained.contains(w); });
  if (first == workers.end()) return std::nullopt;
  draining_ = true;
  return *first;
}

TimePoint first_round_deadline(const NodeRoundLimits& limits, TimePoint started) {
  return started + limits.elastic_timeout;
}

std::optional<std::string> first_round_stop(int nodes, const NodeRoundLimits& limits,
                                            TimePoint started, TimePoint now) {
  if (now < first_round_deadline(limits, started)) return std::nullopt;
  return "only " + std::to_string(nodes) + " of --nnodes " + std::to_string(limits.min_nodes) +
         " nodes came within --elastic-timeout " + discovery::seconds_text(limits.elastic_timeout);
}

PlanningDecision decide_planning(const PlanningState& state, const NodeRoundLimits& limits,
                                 TimePoint since, TimePoint now) {
  using Kind = PlanningDecision::Kind;
  int needed = round_size_needed(limits.min_nodes, state.a_worker_finished);
  if (state.survivors_waiting) {
    return {.give_up_on_waiting = now >= since + limits.checkin_timeout, .needed = needed};
  }
  if (state.nodes == 0 || state.nodes < needed) {
    if (now < since + limits.elastic_timeout) return {.needed = needed};
    return {.kind = Kind::kStop, .needed = needed};
  }
  return {.kind = Kind::kForm, .needed = needed};
}

void AbsentNodes::answered(TimePoint now) {
  if (grace_until_ && now >= *grace_until_) grace_until_.reset();
}

bool AbsentNodes::count_as_gone(const NodeJobView& view,
                                const std::function<bool()>& own_lease_alive) const {
  if (absent_nodes(view).empty()) return true;
  if (grace_until_) return false;
  return own_lease_alive();
}

}  // namespace cohort::elastic_policy
