#include "agent/agent_cause.h"

#include <algorithm>

namespace cohort::discovery {
namespace {

bool in_round(const AgentRound& round, const std::string& worker) {
  return std::any_of(round.members.begin(), round.members.end(),
                     [&](const AgentMember& m) { return m.worker == worker; });
}

bool node_lists(const AgentJobView& view, const AgentMember& m) {
  auto node = view.nodes.find(m.node);
  if (node == view.nodes.end()) return false;
  const auto& workers = node->second.workers;
  return std::find(workers.begin(), workers.end(), m.worker) != workers.end();
}

// The cause of one member, or nothing if it is still training in `round`.
std::optional<AgentCause> member_cause(const AgentMember& m, const AgentSnapshot& s) {
  const AgentJobView& view = s.view;
  if (auto exit = s.exits.find(m.worker); exit != s.exits.end()) {
    if (exit->second == "0")
      return AgentCause{"worker_finished", "worker " + m.worker + " finished"};
    if (exit->second == "left") return AgentCause{"worker_left", "worker " + m.worker + " left"};
    return AgentCause{"failure", "worker " + m.worker + " on " + m.node + " " + exit->second};
  }
  if (view.drained.contains(m.worker))
    return AgentCause{"drain", "worker " + m.worker + " drained"};
  if (s.every_node && !node_lists(view, m)) {
    return AgentCause{"failure", "worker " + m.worker + " on " + m.node + " is gone"};
  }
  auto checkins = view.checkins.find(m.worker);
  if (checkins != view.checkins.end() && checkins->second.contains(m.entry + 1)) {
    return AgentCause{"worker_left", "worker " + m.worker + " left its round"};
  }
  return std::nullopt;
}

// A worker of a live node outside `round` that checked in: it waits to join.
std::optional<AgentCause> newcomer(const AgentRound& round, const AgentJobView& view) {
  for (const auto& [node, record] : view.nodes) {
    for (const auto& worker : record.workers) {
      if (!in_round(round, worker) && view.checkins.contains(worker)) {
        return AgentCause{"hosts_changed",
                          "worker " + worker + " on " + node + " is ready to join"};
      }
    }
  }
  return std::nullopt;
}

int weight(const char* cause) {
  for (int i = 0; const char* c : {"failure", "drain", "worker_finished", "hosts_changed"}) {
    if (std::string(cause) == c) return i;
    ++i;
  }
  return 4;  // worker_left: gives way to any other (launcher/round_cause.h)
}

}  // namespace

std::optional<AgentCause> round_cause(const AgentRound& round, const AgentSnapshot& s) {
  std::optional<AgentCause> best = newcomer(round, s.view);
  for (const auto& m : round.members) {
    auto c = member_cause(m, s);
    if (c && (!best || weight(c->cause) < weight(best->cause))) best = c;
  }
  return best;
}

}  // namespace cohort::discovery
