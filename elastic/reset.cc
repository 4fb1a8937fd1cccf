#include "elastic/reset.h"

#include "base/log.h"
#include "core/runtime_slot.h"
#include "elastic/reports.h"
#include "elastic/round_entry.h"
#include "elastic/session.h"

namespace cohort::elastic::detail {
namespace {

using Clock = std::chrono::steady_clock;

std::shared_ptr<Runtime> take_elastic_runtime(const rendezvous::CheckIn& why) {
  std::shared_ptr<Runtime> old = cohort::detail::take_runtime();
  if (!old) throw NotInitialized("elastic reset: cohort is not initialized");
  if (!session_of(*old)) {
    cohort::detail::install_runtime(old);
    throw InternalError(
        "elastic reset: this worker was not started by cohortrun's elastic mode, "
        "so there is no launcher to ask for a new world (" +
        why.reason + ")");
  }
  return old;
}

// A failed world is abandoned: waiting for peers that may be dead would only delay recovery. An
// interrupted world (a drain is one too) is healthy and every rank is leaving it at the same
// commit, so it shuts down collectively: a rank that closed its connections at once could cut off
// a peer that has not yet read the last collective's data (the host-update allreduce itself),
// turning that peer's interrupt into a failure.
void leave(Runtime& old, const rendezvous::CheckIn& why) {
  if (why.kind != rendezvous::CheckIn::Kind::kFailed) {
    old.shutdown();
  } else {
    old.abandon(why.reason.empty() ? "the runtime was reset" : why.reason);
  }
}

double ms(std::chrono::microseconds d) {
  return static_cast<double>(d.count()) / 1000.0;
}

}  // namespace

void reset(const rendezvous::CheckIn& why) {
  auto start = Clock::now();
  std::shared_ptr<Runtime> old = take_elastic_runtime(why);
  Config config = old->config();
  Session previous = *session_of(*old);
  Placement before = old->topology();
  log::debug("elastic reset: leaving round ", previous.assignment.round, " (",
             rendezvous::format_checkin(why), ")");
  leave(*old, why);
  old.reset();  // joins Gloo's connections down unless another thread still holds it
  ResetTimings timings{.old_rank = before.rank, .old_size = before.size};
  timings.teardown = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  log::debug("elastic reset: left round ", previous.assignment.round, " in ", ms(timings.teardown),
             " ms");

  EntryTimings entry_timings;
  std::shared_ptr<Runtime> next =
      enter_round(config, previous.launcher, previous.entry + 1, why, entry_timings);
  Session& now = *session_of(*next);
  timings.round = now.assignment.round;
  timings.new_rank = next->topology().rank;
  timings.new_size = next->topology().size;
  timings.assignment = entry_timings.assignment;
  timings.connect = entry_timings.connect;
  now.last_reset = timings;
  now.restores = previous.restores;
  report_reset(now, config.worker_id);
  cohort::detail::install_runtime(next);
  log::info("elastic reset ", now.entry, " (", rendezvous::format_checkin(why), "): rank ",
            timings.old_rank, " of ", timings.old_size, " -> rank ", timings.new_rank, " of ",
            timings.new_size, " in round ", timings.round, "; teardown ", ms(timings.teardown),
            " ms, assignment ", ms(timings.assignment), " ms, connect ", ms(timings.connect),
            " ms");
}

}  // namespace cohort::elastic::detail
