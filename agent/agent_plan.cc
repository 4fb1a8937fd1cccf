#include "agent/agent_plan.h"

#include <algorithm>

namespace cohort::discovery {

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

std::set<std::string> absent_nodes(const AgentJobView& view) {
  std::set<std::string> absent;
  if (!view.last_round || view.last_round->stop) return absent;
  for (const auto& m : view.last_round->members) {
    if (!view.finished.contains(m.worker) && !view.nodes.contains(m.node)) absent.insert(m.node);
  }
  return absent;
}

int nodes_in(const AgentRound& round) {
  std::set<std::string> nodes;
  for (const auto& m : round.members) nodes.insert(m.node);
  return static_cast<int>(nodes.size());
}

}  // namespace cohort::discovery
