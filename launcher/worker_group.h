// The worker processes of a cohortrun job, static or elastic: their output forwarded line by line
// (worker_output.h: behind a label such as "[3] ", and into files), their exits collected by pid,
// and signals to their process groups with a SIGKILL deadline. waitpid() is only called for the
// group's own pids, so other children of cohortrun (the host discovery script) keep their exit
// status to themselves. What an exit means, and whom to stop when, is the job's decision.
#pragma once

#include <poll.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/clock.h"
#include "launcher/worker_launcher.h"
#include "launcher/worker_output.h"

namespace cohort::discovery {

struct WorkerExit {
  int id = 0;
  std::string host;
  pid_t pid = -1;
  int status = 0;  // as from waitpid
  // Killed by a signal that pass_on() sent it (SIGUSR1, SIGUSR2): a remote worker's ssh session
  // reports that as exit status 128 + the signal.
  bool by_passed_signal = false;
  bool exited_zero() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// The event log's verdict on an exit (docs/operations.md, worker_exit): "stopped" where the job
// stopped the worker or told it to leave (`stopped`), else "finished" (status 0), "signalled"
// (by_passed_signal: not a failure) or "failed".
const char* exit_verdict(const WorkerExit& exit, bool stopped);

class WorkerGroup {
 public:
  WorkerGroup(std::chrono::milliseconds term_grace, const OutputOptions& output);

  // `id` is the job's name for the worker (its rank in a static job); `source` says whose its
  // lines are.
  void add(int id, LaunchedWorker worker, OutputSource source);
  // The worker has rank `rank` in round `round` from now on.
  void place(int id, int rank, int round);
  bool empty() const { return workers_.empty(); }
  bool running(int id) const;
  bool all_exited() const;
  // Every worker has exited and all of its output has been forwarded (or given up on).
  bool finished() const { return all_exited() && open_streams() == 0; }

  // Appends the open output pipes to `fds`; forward_ready() then reads those poll() marked.
  void add_poll_fds(std::vector<pollfd>& fds);
  void forward_ready(const std::vector<pollfd>& fds);

  // The workers that exited since the last call, in id order; never blocks.
  std::vector<WorkerExit> reap();

  // Sends `sig` to the worker's process group. Unless `sig` is SIGKILL, SIGKILL follows once
  // `term_grace` has passed, if the worker is still running by then.
  void stop(int id, int sig);
  void stop_all(int sig);
  // Sends `sig` to every running worker, and nothing follows: a local worker's process group gets
  // it, a remote worker's ssh session is asked to send it on (ssh_launcher.h).
  // A worker killed by it is reaped with by_passed_signal.
  void pass_on(int sig);

  // The next moment on_time() has work: a SIGKILL due, or giving up on output that something a
  // worker left running still holds open after it exited. None: sleep until an event.
  std::optional<TimePoint> next_deadline() const;
  void on_time();

 private:
  struct Stream {
    Fd fd;
    bool is_stderr = false;
    std::string partial;  // a line not yet ended
  };
  struct Worker {
    LaunchedWorker info;
    OutputSource source;
    Stream out, err;
    std::optional<int> status;             // waitpid status once exited
    std::optional<TimePoint> kill_at;      // SIGKILL due
    std::optional<TimePoint> drain_until;  // after the exit, how long output is still forwarded
    uint64_t passed_on = 0;                // bit `sig`: pass_on() sent it `sig`
  };
  // After a worker exits, how long output still held open by its children is forwarded.
  static constexpr std::chrono::seconds kDrainTime{2};

  size_t open_streams() const;
  static bool killed_by_passed_signal(const Worker& w, int status);
  void forward(Worker& worker, Stream& stream);
  void flush_partial(const Worker& worker, Stream& stream);
  void give_up_output(Worker& worker);

  std::chrono::milliseconds term_grace_;
  WorkerOutput output_;
  std::map<int, Worker> workers_;
  std::vector<std::pair<int, Stream*>> polled_;  // fds appended by add_poll_fds, in order
  size_t polled_from_ = 0;                       // where they start in the caller's vector
};

}  // namespace cohort::discovery
