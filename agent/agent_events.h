// An agent's events (job_events.h), one typed call each: its own node's workers, the rounds it
// follows, its node's cooldowns and etcd outages. Each agent writes its own --event-log, with
// the job's --rdzv-id as "job" and its node as "node" on every line.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "agent/agent_job.h"
#include "agent/agent_records.h"
#include "launcher/job_events.h"
#include "launcher/worker_group.h"

namespace cohort::discovery {

class AgentEvents {
 public:
  explicit AgentEvents(const AgentOptions& options);

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
  void round(int number, const AgentRound& round);
  void drain(const std::string& node, const std::string& worker);
  void etcd_unreachable(const std::string& why);
  void etcd_recovered();

 private:
  JobEvents events_;
  std::string end_reason_;
};

}  // namespace cohort::discovery
