// The elastic launcher's events (job_events.h), one typed call each, so that elastic_job.cc
// says what happened and this file says how it is written. It also keeps what a round event
// reports besides its members: the cause of the round (the first reason since the last round)
// and the reason the job ended.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "elastic_job/elastic_roster.h"
#include "elastic_job/round_board.h"
#include "launcher/clock.h"
#include "launcher/elastic_hosts.h"
#include "launcher/job_events.h"
#include "launcher/round_cause.h"
#include "launcher/worker_group.h"
#include "launcher/worker_report_log.h"

namespace cohort::discovery {

class ElasticEvents {
 public:
  explicit ElasticEvents(const JobEventsOptions& options) : events_(options) {}
  ElasticEvents(const ElasticEvents&) = delete;
  ElasticEvents& operator=(const ElasticEvents&) = delete;

  void job_start(const std::vector<std::string>& command, int min_np, std::optional<int> max_np);
  void job_end(int exit_code);
  // The first call names the job's end; later ones are ignored.
  void job_stopping(const std::string& why);

  void worker_start(const ElasticWorker& w, pid_t pid);
  void launch_failed(const ElasticWorker& w, const std::string& error);
  // `verdict`: "finished", "failed" or "stopped" (the launcher stopped it or told it to exit).
  void worker_exit(const ElasticWorker& w, const WorkerExit& exit, const char* verdict);
  void worker_timeout(const ElasticWorker& w, const char* which);  // "start" or "checkin"
  void worker_told_exit(const ElasticWorker& w);
  // `drained_by`: the worker whose drain made these changes, if one did.
  void slot_changes(const SlotChanges& changes, const ElasticWorker* drained_by = nullptr);
  void discovery_failure(const std::string& error);
  void discovery_recovered();

  // Why the next round is needed: "failure", "worker_left", "worker_finished", "hosts_changed",
  // "drain". The first since the last round counts, but "worker_left" gives way to any other.
  void note_cause(const char* cause, const std::string& why) { cause_.note(cause, why); }
  // `members` in rank order.
  void round(int round, int resets, const std::vector<const ElasticWorker*>& members);

  // The workers' reports since the last look (rendezvous/worker_reports.h): rank 0's progress
  // (metrics only) and a "reset" event for each member of the current round, `round`, that
  // reported its reset into it (among `resets`, the reports that arrived).
  void collect_reports(RoundBoard& board, const std::vector<WorkerEntry>& resets,
                       ElasticRoster& roster, int round);

 private:
  JobEvents events_;
  RoundCause cause_;
  std::string end_reason_;
  WorkerReportLog reports_{events_};
};

}  // namespace cohort::discovery
