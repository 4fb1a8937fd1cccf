// An agent's events (job_events.h), one typed call each: its own node's workers, the rounds it
// follows (with their cause), its node's cooldowns, etcd outages, and its workers' reports. Each
// agent writes its own --event-log, with the job's --rdzv-id as "job" and its node as "node" on
// every line.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

#include "agent/agent_options.h"
#include "agent/agent_records.h"
#include "agent/agent_view.h"
#include "launcher/job_events.h"
#include "launcher/round_cause.h"
#include "launcher/worker_group.h"
#include "launcher/worker_report_log.h"

namespace cohort::discovery {

class AgentEvents {
 public:
  explicit AgentEvents(const AgentOptions& options);
  AgentEvents(const AgentEvents&) = delete;
  AgentEvents& operator=(const AgentEvents&) = delete;

  void job_start(const AgentOptions& options);
  void job_end(int exit_code);
  // The first call names the job's end (for this node); later ones are ignored.
  void job_stopping(const std::string& why);
  void worker_start(const std::string& worker, int slot, pid_t pid);
  // `verdict`: "finished", "failed" or "stopped".
  void worker_exit(const std::string& worker, const WorkerExit& exit, const char* verdict);
  // This agent kills its worker: "start" (--start-timeout) or "planner" (the planner gave up).
  void worker_timeout(const std::string& worker, const char* which);
  void blacklist(const std::string& node, int failures, std::chrono::milliseconds cooldown);
  // The round this agent follows from now on, with the cause its planner published (`published`,
  // RoundCause::noted's form), or else the one this agent noted since the last one.
  void round(int number, const AgentRound& round, const std::optional<std::string>& published);
  // The cause noted since the last round followed, for the planner to publish (causes/<r>).
  std::string noted_cause() const { return cause_.noted(); }
  // What `s` adds to the record: the cause of the next round, if a member of the round followed
  // left it (agent_cause.h), rank 0's progress, and a "reset" event for each of this node's
  // members of that round that reported its reset into it (launcher/worker_report_log.h).
  void observe(const AgentSnapshot& s);
  void drain(const std::string& node, const std::string& worker);
  void etcd_unreachable(const std::string& why);
  void etcd_recovered();

 private:
  JobEvents events_;
  std::string node_;
  std::string end_reason_;
  RoundCause cause_;
  WorkerReportLog reports_{events_};
  std::optional<AgentRound> followed_;  // the round last followed
};

}  // namespace cohort::discovery
