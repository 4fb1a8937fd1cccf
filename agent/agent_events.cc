#include "agent/agent_events.h"

#include "agent/agent_cause.h"
#include "launcher/event_fields.h"

namespace cohort::discovery {

using nlohmann::json;

AgentEvents::AgentEvents(const AgentOptions& options)
    : events_({.event_log = options.events.event_log,
               .metrics_file = options.events.metrics_file,
               .job_id = options.job_id,
               .node = options.node}),
      node_(options.node) {}

void AgentEvents::job_start(const AgentOptions& o) {
  events_.emit("job_start", {{"launcher", "agent"},
                             {"command", o.command},
                             {"min_nodes", o.min_nodes},
                             {"max_nodes", o.max_nodes},
                             {"nproc_per_node", o.nproc_per_node}});
}

void AgentEvents::job_end(int exit_code) {
  events_.emit("job_end", {{"exit_code", exit_code},
                           {"reason", end_reason_.empty() ? "the workers finished" : end_reason_}});
}

void AgentEvents::job_stopping(const std::string& why) {
  if (end_reason_.empty()) end_reason_ = why;
}

void AgentEvents::worker_start(const std::string& worker, int slot, pid_t pid) {
  events_.emit("worker_start", {{"worker", worker}, {"slot", slot}, {"pid", pid}});
}

void AgentEvents::worker_exit(const std::string& worker, const WorkerExit& exit,
                              const char* verdict) {
  json fields = {{"worker", worker}, {"pid", exit.pid}, {"verdict", verdict}};
  fields.update(exit_fields(exit.status));
  events_.emit("worker_exit", fields);
}

void AgentEvents::worker_timeout(const std::string& worker, const char* which) {
  events_.emit("worker_timeout", {{"worker", worker}, {"timeout", which}});
}

void AgentEvents::blacklist(const std::string& node, int failures,
                            std::chrono::milliseconds cooldown) {
  events_.emit("blacklist",
               penalty_fields({.host = node, .failures = failures, .cooldown = cooldown}));
}

void AgentEvents::round(int number, const AgentRound& round,
                        const std::optional<std::string>& published) {
  if (published) cause_.adopt(*published);
  json members = json::array();
  for (size_t rank = 0; rank < round.members.size(); ++rank) {
    const AgentMember& m = round.members[rank];
    members.push_back({{"rank", rank}, {"worker", m.worker}, {"host", m.node}});
  }
  json fields = {{"round", number}, {"size", round.members.size()}, {"resets", number}};
  fields.update(cause_.take());
  fields["members"] = members;
  events_.emit("round", fields);
  followed_ = round;
}

void AgentEvents::observe(const AgentSnapshot& s) {
  if (s.progress) reports_.progress(*s.progress);
  if (!followed_) return;
  if (auto c = round_cause(*followed_, s)) cause_.note(c->cause, c->why);
  for (const AgentMember& m : followed_->members) {
    auto reports = s.resets.find(m.worker);
    if (m.node != node_ || m.entry < 1 || reports == s.resets.end()) continue;
    if (auto r = reports->second.find(m.entry); r != reports->second.end()) {
      reports_.reset(m.worker, m.entry, r->second);
    }
  }
}

void AgentEvents::drain(const std::string& node, const std::string& worker) {
  events_.emit("drain", {{"host", node}, {"worker", worker}, {"source", "worker"}});
}

void AgentEvents::etcd_unreachable(const std::string& why) {
  events_.emit("etcd_unreachable", {{"error", why}});
}

void AgentEvents::etcd_recovered() {
  events_.emit("etcd_recovered");
}

}  // namespace cohort::discovery
