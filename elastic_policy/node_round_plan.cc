#include "elastic_policy/node_round_plan.h"

#include <algorithm>

#include "elastic_policy/elastic_policy.h"
#include "elastic_policy/node_rounds.h"
#include "launcher/host_groups.h"

namespace cohort::elastic_policy {
namespace {

bool checked_in(const NodeJobView& view, const std::string& worker, int entry) {
  auto it = view.checkins.find(worker);
  return it != view.checkins.end() && it->second.contains(entry);
}

// The member's agent is live and still lists it.
bool still_there(const NodeJobView& view, const NodeMember& member) {
  auto node = view.nodes.find(member.node);
  if (node == view.nodes.end()) return false;
  const auto& workers = node->second.workers;
  return std::find(workers.begin(), workers.end(), member.worker) != workers.end();
}

bool in_round(const NodeRound& round, const std::string& worker) {
  return std::any_of(round.members.begin(), round.members.end(),
                     [&](const NodeMember& m) { return m.worker == worker; });
}

// Nodes in the order their workers take ranks: those of `survivors` first, then the rest by name,
// at most max_nodes (rule 4).
std::vector<std::string> node_order(const NodeJobView& view,
                                    const std::vector<NodeMember>& survivors, int max_nodes) {
  std::vector<std::string> survivor_nodes, by_name;
  for (const auto& m : survivors) survivor_nodes.push_back(m.node);
  for (const auto& [node, record] : view.nodes) by_name.push_back(node);
  return round_node_order(survivor_nodes, by_name, max_nodes);
}

// The last round's members still listed that did not drain (a drained worker leaves with its
// node).
std::vector<NodeMember> survivors_of(const NodeJobView& view) {
  std::vector<NodeMember> survivors;
  if (!view.last_round) return survivors;
  for (const auto& m : view.last_round->members) {
    if (still_there(view, m) && !view.drained.contains(m.worker)) survivors.push_back(m);
  }
  return survivors;
}

// The checked-in workers of `order`'s nodes that were not in the last round, node by node.
void add_newcomers(const NodeJobView& view, const std::vector<std::string>& order,
                   NodeRound& round) {
  // Rule 10: once a worker finished, only the last round's members go on. A newcomer would start
  // from a fresh state (or, re-joining, from an older commit) and train again what they committed.
  if (!view.finished.empty()) return;
  for (const auto& node : order) {
    for (const auto& worker : view.nodes.at(node).workers) {
      if (view.last_round && in_round(*view.last_round, worker)) continue;
      // At the entry it waits at: 0 for a new worker; a later one for a worker of an earlier
      // round whose node was counted as gone (its record vanished) and which checked in again.
      auto entries = view.checkins.find(worker);
      if (entries == view.checkins.end()) continue;
      round.members.push_back({worker, node, *entries->second.rbegin()});
    }
  }
}

}  // namespace

std::optional<std::string> round_needed(const NodeJobView& view, int min_nodes) {
  if (view.last_round && view.last_round->stop) return std::nullopt;
  if (!view.last_round) {
    if (static_cast<int>(view.nodes.size()) < min_nodes) return std::nullopt;
    for (const auto& [node, record] : view.nodes) {
      for (const auto& worker : record.workers) {
        if (!checked_in(view, worker, 0)) return std::nullopt;
      }
    }
    return "the first round: " + std::to_string(view.nodes.size()) + " nodes are ready";
  }
  std::string round = "round " + std::to_string(view.last_round_number);
  for (const auto& m : view.last_round->members) {
    if (view.finished.contains(m.worker)) continue;
    if (!still_there(view, m)) return "worker " + m.worker + " of " + round + " is gone";
    if (checked_in(view, m.worker, m.entry + 1)) return "worker " + m.worker + " left " + round;
  }
  return std::nullopt;
}

NodePlan plan_node_round(const NodeJobView& view, const NodePlanOptions& options) {
  NodePlan plan;
  int resets = view.last_round_number + 1;  // the rounds before the one planned
  if (reset_limit_exceeded(resets, options.reset_limit)) {
    plan.round.stop = "the reset limit of " + std::to_string(*options.reset_limit) +
                      " was exceeded (round " + std::to_string(resets) + ")";
    return plan;
  }
  auto survivors = survivors_of(view);
  auto order = node_order(view, survivors, options.max_nodes);
  plan.round.generation = options.generation;
  for (const auto& m : survivors) {
    if (std::find(order.begin(), order.end(), m.node) == order.end()) {
      plan.dropped.push_back(m.worker);
      continue;
    }
    if (!checked_in(view, m.worker, m.entry + 1)) plan.waiting.push_back(m.worker);
    plan.round.members.push_back({m.worker, m.node, m.entry + 1});
  }
  add_newcomers(view, order, plan.round);
  // A node's newcomers take their ranks after its survivors, before the next node's.
  discovery::group_by_host(plan.round.members, [](const NodeMember& m) { return m.node; });
  return plan;
}

int nodes_in(const NodeRound& round) {
  std::set<std::string> nodes;
  for (const auto& m : round.members) nodes.insert(m.node);
  return static_cast<int>(nodes.size());
}

bool node_job_done(const NodeJobView& view) {
  if (!view.last_round || view.last_round->stop) return false;
  return std::all_of(view.last_round->members.begin(), view.last_round->members.end(),
                     [&](const NodeMember& m) { return view.finished.contains(m.worker); });
}

NodeStart node_may_start(const NodeJobView& view, const std::string& node, int max_nodes) {
  if (!view.finished.empty()) return NodeStart::kFinishing;
  const auto& last = view.last_round;
  if (!last) return NodeStart::kStart;
  bool member = std::any_of(last->members.begin(), last->members.end(),
                            [&](const NodeMember& m) { return m.node == node; });
  return !member && nodes_in(*last) >= max_nodes ? NodeStart::kRoundFull : NodeStart::kStart;
}

std::set<std::string> absent_nodes(const NodeJobView& view) {
  std::set<std::string> absent;
  if (!view.last_round || view.last_round->stop) return absent;
  for (const auto& m : view.last_round->members) {
    if (!view.finished.contains(m.worker) && !view.nodes.contains(m.node)) absent.insert(m.node);
  }
  return absent;
}

}  // namespace cohort::elastic_policy
