// Watches a static job's workers: a worker that fails stops the others (SIGTERM, then SIGKILL
// after a grace period), SIGINT and SIGTERM are forwarded, and the job ends when every worker
// has exited. The processes themselves (output, reaping, signals) are a WorkerGroup, shared with
// elastic jobs. It sleeps in poll() on the output pipes and a signalfd: no polling loop.
#pragma once

#include <chrono>
#include <string>

#include "base/fd.h"
#include "launcher/job_events.h"
#include "launcher/worker_group.h"
#include "launcher/worker_launcher.h"

namespace cohort::discovery {

class Supervisor {
 public:
  // `signals` comes from block_job_signals(); the job's events go to `events`.
  Supervisor(Fd signals, std::chrono::milliseconds term_grace, const OutputOptions& output,
             JobEvents& events);

  void add(int rank, LaunchedWorker worker);
  // The job cannot go on (e.g. a worker failed to start): say why and stop the workers added.
  void abort(const std::string& why);
  // Runs until every worker has exited and its output is drained. Returns cohortrun's exit
  // status: 0 if every worker exited 0, otherwise non-zero, after saying which rank failed how.
  int run();

 private:
  void on_signals();
  void on_exit(const WorkerExit& exit);
  void stop_all(int sig);

  Fd signals_;
  WorkerGroup workers_;
  JobEvents& events_;
  std::string end_reason_ = "the workers finished";
  bool stopping_ = false;
  int exit_code_ = 0;
};

}  // namespace cohort::discovery
