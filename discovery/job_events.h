// The launcher's record of a job for machines. Every event (a round formed, a worker exited, a
// host blacklisted, ...) is one emit(): with --event-log FILE it becomes one JSON object on one
// line of FILE, with the time, the job's id and the event's fields (docs/operations.md lists every
// event and field). Off by default; the human-readable "[cohortrun]" lines are not affected.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/fd.h"

namespace cohort::discovery {

struct JobEventsOptions {
  std::string event_log;  // --event-log FILE; empty: none
  std::string job_id;     // every line's "job"
  std::string node;       // agent mode: this agent's node, every line's "node"; empty: none
};

class JobEvents {
 public:
  JobEvents() = default;  // records nothing
  // Opens the event log for appending, creating it. Throws InvalidArgument naming --event-log.
  explicit JobEvents(JobEventsOptions options);

  // Records `event` with `fields` (a JSON object). A failed write is reported once; the job
  // goes on.
  void emit(const std::string& event, nlohmann::json fields = nlohmann::json::object());

 private:
  JobEventsOptions options_;
  Fd log_;
  bool write_error_reported_ = false;
};

// A job id for launchers that have none of their own (--rdzv-id names an agent job):
// "<host>-<UTC time>-<pid>", e.g. "node7-20261125T014000Z-4242".
std::string new_job_id();

}  // namespace cohort::discovery
