#include "elastic_job/elastic_events.h"

#include "launcher/event_fields.h"

namespace cohort::discovery {

using nlohmann::json;

void ElasticEvents::job_start(const std::vector<std::string>& command, int min_np,
                              std::optional<int> max_np) {
  events_.emit("job_start", {{"launcher", "elastic"},
                             {"command", command},
                             {"min_np", min_np},
                             {"max_np", max_np ? json(*max_np) : json(nullptr)}});
}

void ElasticEvents::job_end(int exit_code) {
  events_.emit("job_end", {{"exit_code", exit_code},
                           {"reason", end_reason_.empty() ? "the workers finished" : end_reason_}});
}

void ElasticEvents::job_stopping(const std::string& why) {
  if (end_reason_.empty()) end_reason_ = why;
}

void ElasticEvents::worker_start(const ElasticWorker& w, pid_t pid) {
  events_.emit("worker_start",
               {{"worker", w.id}, {"host", w.slot.host}, {"slot", w.slot.slot}, {"pid", pid}});
}

void ElasticEvents::launch_failed(const ElasticWorker& w, const std::string& error) {
  events_.emit("launch_failed", {{"worker", w.id}, {"host", w.slot.host}, {"error", error}});
}

void ElasticEvents::worker_exit(const ElasticWorker& w, const WorkerExit& exit,
                                const char* verdict) {
  json fields = {{"worker", w.id},
                 {"host", w.slot.host},
                 {"slot", w.slot.slot},
                 {"pid", exit.pid},
                 {"rank", w.rank ? json(*w.rank) : json(nullptr)},
                 {"verdict", verdict}};
  fields.update(exit_fields(exit.status));
  events_.emit("worker_exit", fields);
}

void ElasticEvents::worker_timeout(const ElasticWorker& w, const char* which) {
  events_.emit("worker_timeout", {{"worker", w.id}, {"host", w.slot.host}, {"timeout", which}});
}

void ElasticEvents::worker_told_exit(const ElasticWorker& w) {
  events_.emit("worker_told_exit", {{"worker", w.id}, {"host", w.slot.host}});
}

void ElasticEvents::slot_changes(const SlotChanges& changes, const ElasticWorker* drained_by) {
  if (changes.penalized) events_.emit("blacklist", penalty_fields(*changes.penalized));
  for (const auto& host : changes.drained) {
    events_.emit("drain", {{"host", host},
                           {"worker", drained_by ? json(drained_by->id) : json(nullptr)},
                           {"source", drained_by ? "worker" : "discovery"}});
  }
  if (changes.empty()) return;
  events_.emit("slots_changed",
               {{"added", slot_list(changes.added)}, {"removed", slot_list(changes.removed)}});
  note_cause("hosts_changed", "usable slots changed: " + changes.describe());
}

void ElasticEvents::discovery_failure(const std::string& error) {
  events_.emit("discovery_failure", {{"error", error}});
}

void ElasticEvents::discovery_recovered() {
  events_.emit("discovery_recovered");
}

void ElasticEvents::round(int round, int resets, const std::vector<const ElasticWorker*>& members) {
  json list = json::array();
  for (const ElasticWorker* w : members) {
    list.push_back({{"rank", w->rank ? json(*w->rank) : json(nullptr)},
                    {"worker", w->id},
                    {"host", w->slot.host},
                    {"slot", w->slot.slot}});
  }
  json fields = {{"round", round}, {"size", members.size()}, {"resets", resets}};
  fields.update(cause_.take());
  fields["members"] = list;
  events_.emit("round", fields);
}

void ElasticEvents::collect_reports(RoundBoard& board, const std::vector<WorkerEntry>& resets,
                                    ElasticRoster& roster, int round) {
  if (auto p = board.progress()) reports_.progress(*p);
  for (const WorkerEntry& r : resets) {
    const ElasticWorker* w = roster.find(r.id);
    // Only a member's report for the entry it joined the current round with.
    if (w == nullptr || w->round != round || r.entry != w->entry - 1 || r.entry < 1 ||
        reports_.has_reset(r.id, r.entry)) {
      continue;
    }
    if (auto text = board.reset_report(r.id, r.entry)) reports_.reset(r.id, r.entry, *text);
  }
}

}  // namespace cohort::discovery
