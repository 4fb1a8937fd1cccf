// Elastic host discovery: runs the user's --host-discovery-script on a schedule, parses its
// "host" / "host:slots" lines, and keeps the last good host set when a run fails, hangs or prints
// garbage. Driven by an event loop through poll_fds(), poll_timeout() and advance().
#pragma once

#include <poll.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/script_run.h"
#include "launcher/clock.h"
#include "launcher/hosts.h"

namespace cohort::discovery {

// Lines "host" or "host:slots", either followed by ":drain" (the host takes no new work and its
// workers leave at their next commit); surrounding whitespace is trimmed, blank lines and text
// from '#' on are ignored. A host without slots gets `default_slots`. Throws InvalidArgument naming
// the line for a bad host name, a bad slot count (1..4096), or a host listed twice. No lines at all
// is a valid answer: there are no hosts right now.
std::vector<HostSlots> parse_discovered_hosts(std::string_view text, int default_slots);

struct HostDiscoveryOptions {
  // The script and its arguments, executed directly (no shell): it must be executable, with a
  // "#!" line if it is a script. cohortrun passes just the --host-discovery-script path.
  std::vector<std::string> command;
  std::chrono::milliseconds interval{1000};  // from the end of one run to the start of the next
  ScriptLimits limits;                       // timeout and output sizes of one run
  int default_slots = 1;                     // --slots-per-host
};

enum class DiscoveryStatus { kChanged, kUnchanged, kFailed };

struct DiscoveryResult {
  DiscoveryStatus status = DiscoveryStatus::kUnchanged;
  // For kFailed: what went wrong, with a bounded excerpt of the script's output, ready to log.
  std::string error;
};

class HostDiscovery {
 public:
  // Throws InvalidArgument for bad options or a script that does not exist or is not executable.
  // The first run is due at once.
  explicit HostDiscovery(HostDiscoveryOptions options, NowFn now = steady_now);

  // The set of the last successful run, in the script's order; empty before the first success.
  const std::vector<HostSlots>& hosts() const { return hosts_; }
  bool has_succeeded() const { return succeeded_; }
  int consecutive_failures() const { return consecutive_failures_; }

  bool running() const { return run_ != nullptr; }
  // How long until the next run is due (zero when due); while a run is in flight, zero.
  std::chrono::milliseconds time_until_due() const;
  // How long an event loop may sleep in poll() before it must call advance(): until the next run
  // is due, or until the running script's deadline.
  int poll_timeout() const;
  // The running script's descriptors, to add to the event loop's poll set.
  std::vector<pollfd> poll_fds() const;
  // Starts a run when one is due, makes progress on a running one; never blocks. Returns the
  // outcome when a run has just ended; hosts() then holds the new set (kept on kFailed).
  std::optional<DiscoveryResult> advance();
  // Runs the script now and waits for it (at most about limits.timeout). For startup and tests.
  DiscoveryResult run_now();

 private:
  // Starts the script; a script that cannot be started is a failed run, returned at once.
  std::optional<DiscoveryResult> start();
  DiscoveryResult finish(const ScriptResult& result);
  DiscoveryResult fail(const ScriptResult& result, const std::string& problem);

  HostDiscoveryOptions options_;
  NowFn now_;
  std::unique_ptr<ScriptRun> run_;
  TimePoint next_due_;
  std::vector<HostSlots> hosts_;
  bool succeeded_ = false;
  int consecutive_failures_ = 0;
};

}  // namespace cohort::discovery
