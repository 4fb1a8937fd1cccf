// elastic::run, the host-update check and the queries about resets.
#include "cohort/elastic/run.h"

#include "base/log.h"
#include "cohort/cohort.h"
#include "cohort/elastic/checkpoint.h"
#include "core/fault_injection.h"
#include "core/runtime.h"
#include "core/runtime_slot.h"
#include "elastic/drain.h"
#include "elastic/reports.h"
#include "elastic/reset.h"
#include "elastic/session.h"
#include "rendezvous/store.h"

namespace cohort::elastic {
namespace {

// The allreduce (max) through which rank 0 tells every rank what the launcher said, and every
// rank tells the others whether it drains.
constexpr const char* kHostsUpdatedName = "cohort.elastic.hosts_updated";

// In the order of the max: a worker of the round drains, or hosts changed, both interrupt; a
// launcher that cannot be reached fails the round whatever else happened.
enum HostsAnswer : uint8_t {
  kUnchanged = 0,
  kDraining = 1,
  kUpdated = 2,
  kLauncherUnreachable = 3
};

// Rank 0 on etcd: an outage shorter than the session's limit is waited out commit by commit, as
// if nothing had changed (hosts that changed meanwhile are noticed once etcd answers again).
HostsAnswer tolerate_outage(detail::Session& m, const std::string& error) {
  auto now = std::chrono::steady_clock::now();
  if (!m.unreachable_since) m.unreachable_since = now;
  if (now - *m.unreachable_since >= m.outage_limit) {
    log::error("check_host_updates: cannot reach the launcher: ", error);
    return kLauncherUnreachable;
  }
  log::limited(log::Level::kWarning, "notice-outage", "check_host_updates: cannot reach ",
               m.notices->describe(), "; training goes on and asks again at the next commit (",
               error, ")");
  return kUnchanged;
}

// Only an unreachable store is waited out; any other error (a refused or malformed answer) fails
// the round at once with its own message.
HostsAnswer ask_launcher(detail::Session& m) {
  HostsAnswer answer = kUnchanged;
  try {
    // One read, not a wait: on etcd a get would also open a watch at every commit.
    if (m.notices->lookup(rendezvous::notice_key(m.assignment.generation + 1))) answer = kUpdated;
  } catch (const rendezvous::StoreUnreachable& e) {
    return tolerate_outage(m, e.what());
  } catch (const Error& e) {
    log::error("check_host_updates: asking ", m.notices->describe(), " failed: ", e.what());
    return kLauncherUnreachable;
  }
  if (m.unreachable_since) log::warning("check_host_updates: the launcher's store answers again");
  m.unreachable_since.reset();
  return answer;
}

// Rank 0's progress report: at most once a second, unless `now`.
void report(const State& state, bool now) {
  auto rt = cohort::detail::current_runtime();
  if (detail::Session* session = detail::session_of(*rt)) {
    detail::report_progress(*session, rt->topology().rank, state, now);
  }
}

// After every commit, for as long as run() runs: the host check, then rank 0's progress report.
// A commit that interrupts (a drain, a stop, new hosts) may be the worker's last: it is reported
// at once, so the launcher's metrics end with what was committed.
void after_commit(const State& state) {
  try {
    check_host_updates();
  } catch (const HostsUpdatedInterrupt&) {
    report(state, /*now=*/true);
    throw;
  }
  report(state, /*now=*/false);
}

// Installs after_commit() as the State's commit hook for as long as run() runs.
class CommitHook {
 public:
  explicit CommitHook(State& state) : state_(state) {
    state_.set_commit_hook([&state] { after_commit(state); });
  }
  ~CommitHook() { state_.set_commit_hook({}); }
  CommitHook(const CommitHook&) = delete;
  CommitHook& operator=(const CommitHook&) = delete;

 private:
  State& state_;
};

// state.sync(); where it finds committed state lost, the newest checkpoint of the options'
// directory in its place, counted in the session (elastic mode) and reported at once.
void sync_or_fall_back(State& state, const RunOptions& options) {
  std::string lost;
  try {
    state.sync();
    return;
  } catch (const StateLostError& e) {
    if (options.checkpoint_dir.empty()) throw;
    lost = e.what();
  }
  const std::string dir = options.checkpoint_dir.string();
  log::warning("elastic::run: ", lost, "; loading the newest checkpoint of ", dir);
  std::optional<CheckpointInfo> loaded = load_latest(state, options.checkpoint_dir);
  if (!loaded) throw StateLostError(lost + "; and " + dir + " holds no checkpoint to restore");
  log::warning("elastic::run: restored from checkpoint ", loaded->path, " (commit ",
               loaded->commit_count, "): what was committed after it is trained again");
  if (detail::Session* session = detail::session_of(*cohort::detail::current_runtime())) {
    session->restores = {session->restores.count + 1, loaded->sequence, loaded->commit_count};
    report(state, /*now=*/true);
  }
}

}  // namespace

void check_host_updates() {
  auto rt = cohort::detail::current_runtime();
  detail::Session* session = detail::session_of(*rt);
  if (!session) return;
  int notice = session->assignment.generation + 1;
  uint8_t answer = drain_requested() ? kDraining : kUnchanged;
  if (rt->topology().rank == 0) {
    answer = std::max<uint8_t>(answer, ask_launcher(*session));
  }
  allreduce(kHostsUpdatedName, Tensor::of(std::span<uint8_t>(&answer, 1)), {.op = ReduceOp::kMax});
  if (answer == kUpdated) {
    throw HostsUpdatedInterrupt("the launcher announced a change of hosts (notice " +
                                std::to_string(notice) + ")");
  }
  if (answer == kDraining) throw HostsUpdatedInterrupt("a worker of this round drains");
  if (answer == kLauncherUnreachable) {
    throw InternalError("rank 0 could not ask the launcher whether hosts changed");
  }
}

void run(State& state, const std::function<void(State&)>& fn) {
  run(state, fn, RunOptions{});
}

void run(State& state, const std::function<void(State&)>& fn, const RunOptions& options) {
  const bool elastic = is_elastic();
  if (elastic) detail::install_drain_handler();
  CommitHook hook(state);
  for (;;) {
    rendezvous::CheckIn why;
    try {
      if (elastic) {
        auto rt = cohort::detail::current_runtime();
        maybe_inject_fault(rt->config().fault_kill_at, rt->config().worker_id, "sync",
                           detail::session_of(*rt)->entry);
      }
      sync_or_fall_back(state, options);
      fn(state);
      report(state, /*now=*/true);  // the launcher's metrics end with the job's true totals
      return;
    } catch (const HostsUpdatedInterrupt& e) {
      if (!elastic) throw;
      why = {rendezvous::CheckIn::Kind::kInterrupted, e.what()};
    } catch (const StateLostError&) {
      throw;  // another round would find the same ranges missing
    } catch (const InternalError& e) {
      if (!elastic) throw;
      why = {rendezvous::CheckIn::Kind::kFailed, e.what()};
    }
    // A drain leaves a healthy world: after a failure the worker joins the next round first,
    // and drains at its first commit there.
    if (drain_requested() && why.kind == rendezvous::CheckIn::Kind::kInterrupted) {
      why.kind = rendezvous::CheckIn::Kind::kDrained;
    }
    // Outside the try: a reset that fails (the launcher is gone) ends run() with its error.
    if (state.has_commit()) state.restore();
    detail::reset(why);
    state.run_reset_callbacks();
  }
}

bool is_elastic() {
  return detail::session_of(*cohort::detail::current_runtime()) != nullptr;
}

int resets() {
  const detail::Session* session = detail::session_of(*cohort::detail::current_runtime());
  return session ? session->entry : 0;
}

ResetTimings last_reset_timings() {
  const detail::Session* session = detail::session_of(*cohort::detail::current_runtime());
  return session ? session->last_reset : ResetTimings{};
}

}  // namespace cohort::elastic
