#include "agent/agent_plan.h"

#include <algorithm>

#include "elastic_policy/node_rounds.h"

namespace cohort::discovery {
namespace {

bool checked_in(const AgentJobView& view, const std::string& worker, int entry) {
  auto it = view.checkins.find(worker);
  return it != view.checkins.end() && it->second.contains(entry);
}

// The member's agent is live and still lists it.
bool still_there(const AgentJobView& view, const AgentMember& member) {
  auto node = view.nodes.find(member.node);
  if (node == view.nodes.end()) return false;
  const auto& workers = node->second.workers;
  return std::find(workers.begin(), workers.end(), member.worker) != workers.end();
}

bool in_round(const AgentRound& round, const std::string& worker) {
  return std::any_of(round.members.begin(), round.members.end(),
                     [&](const AgentMember& m) { return m.worker == worker; });
}

// Nodes in the order their workers take ranks: those of `survivors` first, then the rest by name,
// at most max_nodes (elastic_policy.h, rule 4).
std::vector<std::string> node_order(const AgentJobView& view,
                                    const std::vector<AgentMember>& survivors, int max_nodes) {
  std::vector<std::string> survivor_nodes, by_name;
  for (const auto& m : survivors) survivor_nodes.push_back(m.node);
  for (const auto& [node, record] : view.nodes) by_name.push_back(node);
  return elastic_policy::round_node_order(survivor_nodes, by_name, max_nodes);
}

}  // namespace

int next_entry(const AgentJobView& view, const std::string& worker) {
  if (!view.last_round) return 0;
  for (const auto& m : view.last_round->members) {
    if (m.worker == worker) return m.entry + 1;
  }
  return 0;
}

bool job_finished(const AgentJobView& view) {
  if (!view.last_round || view.last_round->stop) return false;
  return std::all_of(view.last_round->members.begin(), view.last_round->members.end(),
                     [&](const AgentMember& m) { return view.finished.contains(m.worker); });
}

std::optional<std::string> round_needed(const AgentJobView& view, int min_nodes) {
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

std::set<std::string> absent_nodes(const AgentJobView& view) {
  std::set<std::string> absent;
  if (!view.last_round || view.last_round->stop) return absent;
  for (const auto& m : view.last_round->members) {
    if (!view.finished.contains(m.worker) && !view.nodes.contains(m.node)) absent.insert(m.node);
  }
  return absent;
}

AgentPlan plan_agent_round(const AgentJobView& view, const AgentPlanOptions& options) {
  AgentPlan plan;
  int resets = view.last_round_number + 1;  // the rounds before the one planned
  if (elastic_policy::reset_limit_exceeded(resets, options.reset_limit)) {
    plan.round.stop = "the reset limit of " + std::to_string(*options.reset_limit) +
                      " was exceeded (round " + std::to_string(resets) + ")";
    return plan;
  }
  std::vector<AgentMember> survivors;  // a drained worker is leaving with its node
  if (view.last_round) {
    for (const auto& m : view.last_round->members) {
      if (still_there(view, m) && !view.drained.contains(m.worker)) survivors.push_back(m);
    }
  }
  auto order = node_order(view, survivors, options.max_nodes);
  auto kept = [&](const std::string& node) {
    return std::find(order.begin(), order.end(), node) != order.end();
  };
  plan.round.generation = options.generation;
  for (const auto& m : survivors) {
    if (!kept(m.node)) {
      plan.dropped.push_back(m.worker);
      continue;
    }
    if (!checked_in(view, m.worker, m.entry + 1)) plan.waiting.push_back(m.worker);
    plan.round.members.push_back({m.worker, m.node, m.entry + 1});
  }
  for (const auto& node : order) {
    for (const auto& worker : view.nodes.at(node).workers) {
      if (view.last_round && in_round(*view.last_round, worker)) continue;
      // At the entry it waits at: 0 for a new worker; a later one for a worker of an earlier
      // round whose node was counted as gone (its record vanished) and which checked in again.
      auto entries = view.checkins.find(worker);
      if (entries == view.checkins.end()) continue;
      plan.round.members.push_back({worker, node, *entries->second.rbegin()});
    }
  }
  return plan;
}

int nodes_in(const AgentRound& round) {
  std::set<std::string> nodes;
  for (const auto& m : round.members) nodes.insert(m.node);
  return static_cast<int>(nodes.size());
}

}  // namespace cohort::discovery
