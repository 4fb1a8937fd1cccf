// Agent mode's drain (docs/operations.md, "Draining"), as the policy decides it
// (elastic_policy/node_rounds.h, NodeDrain): a worker of this node drained at a commit (SIGTERM):
// the node leaves the job as if it were removed. Its registration goes at once, so the next round
// is planned without it; each of its workers is told to exit at the entry it checks in with next,
// so they all leave with status 0; then the agent itself leaves. An agent that stops its job
// tells its workers to exit the same way, since they take its SIGTERM as a drain.
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/agent_records.h"
#include "base/log.h"
#include "cohort/errors.h"
#include "launcher/job_report.h"

namespace cohort::discovery {

void Agent::drain_when_asked(const AgentSnapshot& s) {
  std::vector<std::string> workers;
  for (const auto& [key, w] : local_) workers.push_back(w.id);
  if (auto drained = drain_.begins(workers, s.view.drained)) {
    announce("worker " + *drained + " drained; node " + options_.node + " leaves the job");
    events_.drain(options_.node, *drained);
    store_.remove(agent_key(options_.node));
    registered_.reset();
    release_lead();
  }
  if (drain_.draining()) tell_workers_to_leave();
}

// Each local worker is told to exit, so that it leaves with status 0 as soon as it checks in
// (after its drain, or a failure) rather than wait for SIGKILL: at its latest check-in's entry,
// which it may be waiting on, and at the next, which it checks in with if it is in a round (a
// worker reads its assignment once, so the first is harmless then).
void Agent::tell_workers_to_leave() {
  if (!view_) return;
  for (auto& [id, w] : local_) {
    if (w.told_to_leave) continue;
    w.told_to_leave = true;
    w.expected_exit = true;
    auto checkins = view_->checkins.find(w.id);
    int latest = checkins == view_->checkins.end() ? 0 : *checkins->second.rbegin();
    for (int entry : {latest, latest + 1}) board_.tell_exit(w.id, entry);
  }
}

void Agent::leave_when_drained() {
  if (!drain_.leaves(local_.size()) || stopping_) return;
  announce("node " + options_.node + " drained: every worker left with status 0");
  events_.job_stopping("node " + options_.node + " drained");
  stopping_ = true;
  exit_code_ = 0;
}

}  // namespace cohort::discovery
