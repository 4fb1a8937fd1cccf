// Watches a job's workers: forwards their output line by line with a "[rank] " prefix, notices
// when one fails, stops the others (SIGTERM, then SIGKILL after a grace period), and forwards
// SIGINT and SIGTERM. It sleeps in poll() on the output pipes and a signalfd: no polling loop.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/fd.h"
#include "discovery/worker_launcher.h"

namespace cohort::discovery {

// Blocks SIGCHLD, SIGINT and SIGTERM in the calling thread (call before starting any thread or
// worker) and returns a signalfd that receives them.
Fd block_job_signals();

class Supervisor {
 public:
  Supervisor(Fd signals, std::chrono::milliseconds term_grace);

  void add(LaunchedWorker worker);
  // The job cannot go on (e.g. a worker failed to start): say why and stop the workers added.
  void abort(const std::string& why);
  // Runs until every worker has exited and its output is drained. Returns cohortrun's exit
  // status: 0 if every worker exited 0, otherwise non-zero, after saying which rank failed how.
  int run();

 private:
  struct Stream {
    int rank;
    Fd fd;
    bool is_stderr;
    std::string partial;
  };
  struct Worker {
    LaunchedWorker info;
    std::optional<int> status;  // waitpid status once exited
  };

  using Clock = std::chrono::steady_clock;
  // After the last worker exits, how long output still held open by its children is forwarded.
  static constexpr std::chrono::seconds kDrainTime{2};

  size_t open_streams() const;
  // Milliseconds until the next deadline (SIGKILL, or the end of draining), -1 for none.
  int poll_timeout() const;
  void on_deadline();
  void on_signal();
  void reap();
  void on_exit(Worker& worker, int status);
  void stop_all(int signal);
  void forward(Stream& stream);
  void flush_partial(Stream& stream);
  bool all_exited() const;

  Fd signals_;
  std::chrono::milliseconds term_grace_;
  std::vector<Worker> workers_;
  std::vector<Stream> streams_;
  bool stopping_ = false;
  bool killed_ = false;  // SIGKILL sent
  Clock::time_point kill_deadline_;
  std::optional<Clock::time_point> drain_deadline_;
  int exit_code_ = 0;
};

// "exited with status 3" or "was killed by signal 9 (SIGKILL)".
std::string describe_exit(int status);

}  // namespace cohort::discovery
