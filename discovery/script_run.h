// One bounded run of an external program, such as the host discovery script: stdout and stderr
// captured up to size limits, the program's whole process group killed when it outlives its
// timeout, and the program always reaped. advance() never blocks, so an event loop can wait on
// poll_fds() beside its own descriptors; run_script() is the blocking form.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "base/fd.h"
#include "launcher/clock.h"

namespace cohort::discovery {

struct ScriptLimits {
  std::chrono::milliseconds timeout{10000};
  // More stdout than this ends the run as a failure: no host list is that long.
  size_t max_stdout = size_t{1} << 20;
  // Stderr past this is counted and dropped; the program keeps running.
  size_t max_stderr = size_t{64} << 10;
};

struct ScriptResult {
  std::optional<int> wait_status;  // as from waitpid; none when the program could not start
  std::string start_error;         // why it could not start
  std::string wait_error;          // why its exit status could not be collected
  bool timed_out = false;          // killed at the timeout
  bool stdout_overflow = false;    // killed for printing more than max_stdout
  bool output_left_open = false;   // exited, but something outside its group kept stdout open
  std::string out;
  std::string err;
  size_t err_dropped = 0;                // stderr bytes past max_stderr
  std::chrono::milliseconds timeout{0};  // the limit it ran under
  std::chrono::milliseconds elapsed{0};

  // Exited with status 0, printed within its limits and closed its output.
  bool ok() const;
  // What went wrong, e.g. "exited with status 3" or "did not finish within 10000 ms"; empty if
  // ok().
  std::string problem() const;
  // `headline`, then a bounded, escaped excerpt of stdout and stderr, for logs.
  std::string report(const std::string& headline) const;
};

class ScriptRun {
 public:
  // Starts argv[0] (a path, not searched in PATH, run without a shell) in its own process
  // group, stdin from /dev/null. Throws Error when it cannot be started.
  ScriptRun(const std::vector<std::string>& argv, ScriptLimits limits);
  // A run still going is killed and reaped, so no process or zombie outlives this object.
  ~ScriptRun();
  ScriptRun(const ScriptRun&) = delete;
  ScriptRun& operator=(const ScriptRun&) = delete;

  pid_t pid() const { return pid_; }
  bool done() const { return done_; }
  // What to wait on for progress (output pipes, and a pidfd until the program exits).
  std::vector<pollfd> poll_fds() const;
  TimePoint deadline() const { return deadline_; }
  // Reads the output that is ready, notices the exit, enforces the limits. Never waits, except
  // to reap a program it has just killed with SIGKILL.
  void advance();
  const ScriptResult& result() const { return result_; }

 private:
  void read_ready(Fd& fd, bool is_stdout);
  void check_exit();
  void kill_group_and_reap();
  void finish();

  ScriptLimits limits_;
  pid_t pid_ = -1;
  Fd out_, err_, pidfd_;
  TimePoint started_, deadline_;
  bool exited_ = false;
  bool done_ = false;
  ScriptResult result_;
};

// Runs argv to completion, sleeping in poll(); returns within about limits.timeout. A program
// that cannot be started gives a result with start_error set.
ScriptResult run_script(const std::vector<std::string>& argv, const ScriptLimits& limits);

// At most `limit` bytes of `text` (its head or its tail), non-printable bytes as \xNN, with a
// note of how much was left out.
std::string excerpt(const std::string& text, size_t limit, bool keep_tail);

}  // namespace cohort::discovery
