// The launcher's side of the workers' reports (rendezvous/worker_reports.h), one implementation
// for both elastic modes: the elastic job reads them from its rendezvous server, the agents from
// etcd, and both hand the texts here. Rank 0's progress becomes the progress metrics (and a
// "checkpoint_restore" event after a restore from a checkpoint), each worker's reset into a round
// one "reset" event (docs/operations.md).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "launcher/job_events.h"
#include "rendezvous/worker_reports.h"

namespace cohort::discovery {

class WorkerReportLog {
 public:
  // `events` must outlive the log.
  explicit WorkerReportLog(JobEvents& events) : events_(events) {}

  // Rank 0's progress report: recorded when it changed, and one "checkpoint_restore" event for
  // each restore from a checkpoint it counts beyond those already logged. One that does not parse
  // is logged and ignored.
  void progress(const std::string& text);
  // `worker`'s report of its reset into its round as `entry`: one "reset" event, the first time.
  // `worker` is the worker's id as the mode's other events name it. One that does not parse is
  // logged once and ignored.
  void reset(const nlohmann::json& worker, int entry, const std::string& text);
  // Whether the reset report of `worker` for `entry` was taken already (or refused).
  bool has_reset(const nlohmann::json& worker, int entry) const;

 private:
  JobEvents& events_;
  std::optional<rendezvous::Progress> progress_;
  uint64_t restores_ = 0;                         // the most restores a progress report has counted
  std::set<std::pair<std::string, int>> resets_;  // (worker, entry) taken or refused
};

}  // namespace cohort::discovery
