#include "agent/agent_plan.h"

namespace cohort::discovery {

int next_entry(const AgentJobView& view, const std::string& worker) {
  if (!view.last_round) return 0;
  for (const auto& m : view.last_round->members) {
    if (m.worker == worker) return m.entry + 1;
  }
  return 0;
}

}  // namespace cohort::discovery
