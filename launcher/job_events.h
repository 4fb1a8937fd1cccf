// The launcher's record of a job for machines. Every event (a round formed, a worker exited, a
// host blacklisted, ...) is one emit(): with --event-log FILE it becomes one JSON object on one
// line of FILE, with the time, the job's id and the event's fields (docs/operations.md lists every
// event and field); with --metrics-file FILE it updates the metrics (job_metrics.h) and rewrites
// FILE. Both are off by default; the human-readable "[cohortrun]" lines are not affected. Both
// files are written as base/safe_write.h says: never through a link, never a FIFO or a device.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/fd.h"
#include "launcher/job_metrics.h"

namespace cohort::discovery {

struct JobEventsOptions {
  std::string event_log;     // --event-log FILE; empty: none
  std::string metrics_file;  // --metrics-file FILE; empty: none
  std::string job_id;        // every line's "job"
  std::string node;          // agent mode: this agent's node, every line's "node"; empty: none
};

class JobEvents {
 public:
  JobEvents() = default;  // records nothing
  // Opens the event log for appending, creating it, and writes the metrics file once. Throws
  // InvalidArgument naming --event-log or --metrics-file.
  explicit JobEvents(JobEventsOptions options);

  // Records `event` with `fields` (a JSON object). A failed write is reported once; the job
  // goes on.
  void emit(const std::string& event, nlohmann::json fields = nlohmann::json::object());
  // Rank 0's progress report (commits and samples committed): metrics only, not an event.
  void progress(uint64_t commits, uint64_t samples);

 private:
  JobEventsOptions options_;
  void write_metrics_file() const;  // throws, naming the file (base/safe_write.h)
  void write_metrics();             // reports a failure once

  Fd log_;
  std::optional<JobMetrics> metrics_;
  bool write_error_reported_ = false;
  bool metrics_error_reported_ = false;
};

// A job id for launchers that have none of their own (--rdzv-id names an agent job):
// "<host>-<UTC time>-<pid>", e.g. "node7-20261125T014000Z-4242".
std::string new_job_id();

}  // namespace cohort::discovery
