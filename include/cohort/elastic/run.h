// Elastic training: a training function that survives the death of workers and changes of the
// worker set, by rolling back to the last commit and carrying on in a new world.
//
//   cohort::init();                                  // elastic mode: waits for the launcher
//   cohort::elastic::State state;  ... state.track(...);
//   cohort::elastic::run(state, [&](cohort::elastic::State& s) {
//     ... train; every k steps: s.commit();          // may throw HostsUpdatedInterrupt
//   });
//
// Elastic mode is a worker started by cohortrun's elastic mode (COHORT_WORKER_ID set). Anywhere
// else (static cohortrun, mpirun, a lone process) run() syncs and runs the function once, and
// errors propagate. See docs/elastic.md.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>

#include "cohort/elastic/state.h"
#include "cohort/errors.h"

namespace cohort::elastic {

// The launcher announced that hosts were added or removed. Raised by check_host_updates() (and
// so by State::commit() inside run()) on every rank at the same call; run() catches it, resets
// into the new world and goes on.
class HostsUpdatedInterrupt : public Error {
 public:
  using Error::Error;
};

// Runs fn(state) until it returns, recovering from failures:
//  - first state.sync(), so every rank starts from rank 0's values;
//  - InternalError (a collective failed: a peer died, a connection broke, a timeout):
//    state.restore() (back to the last commit), reset, state.run_reset_callbacks(),
//    state.sync(), fn again;
//  - HostsUpdatedInterrupt: the same. It is raised right after a commit, so restore() loses
//    nothing; it makes sure no uncommitted sampler records are left (sync refuses them) when the
//    program called check_host_updates() itself between commits.
// After a reset a sync is always done, on every rank of the new world: whether one is needed is
// never decided locally (ranks that decide differently deadlock, Horovod #3494).
// Reset leaves the runtime (after a failure it abandons it at once, without the collective
// shutdown; after an interrupt, whose world is healthy, all ranks shut down together), checks in
// with the launcher, and builds a new runtime from the rank and size it assigns; survivors keep
// their relative order, so the lowest surviving rank becomes rank 0 and its state is the one
// synced. A worker the launcher removes exits the process with status 0. Reset callbacks run once
// the new runtime exists (rank() and size() are the new ones). Any other exception propagates.
// Outside elastic mode an InternalError propagates too (there is no launcher to ask for a new
// world) and fn runs once. While run() is active the State's commit hook is check_host_updates()
// (any hook set before is replaced, and removed on return).
void run(State& state, const std::function<void(State&)>& fn);

// What run() may fall back on when memory no longer holds the last commit.
struct RunOptions {
  // The directory the program saves its durable checkpoints of `state` into
  // (cohort/elastic/checkpoint.h); empty: none. When the sync after a failure finds committed
  // state that no rank holds any more (StateLostError: a range of a sharded value whose rank and
  // every replica died together), run() loads the newest good checkpoint of it on every rank
  // (load_latest), says so on stderr, and goes on from there: what was committed after that
  // checkpoint is trained again. Without a checkpoint in it the StateLostError ends run(), its
  // message saying so.
  std::filesystem::path checkpoint_dir;
};

// run() with a fallback (RunOptions).
void run(State& state, const std::function<void(State&)>& fn, const RunOptions& options);

// Collective. In elastic mode rank 0 asks the launcher, without waiting, whether hosts changed
// since this round was planned, and broadcasts the answer; every rank then throws
// HostsUpdatedInterrupt if they did. Throws InternalError on every rank if rank 0 cannot reach
// the launcher. Outside elastic mode it returns at once and communicates nothing.
void check_host_updates();

// Draining, for a worker whose machine is about to go (docs/operations.md, "Draining"). In elastic
// mode under cohortrun's launcher, run() makes SIGTERM request a drain (a second SIGTERM ends
// the process as usual), unless the program has a SIGTERM handler of its own. At the next commit
// every rank learns of it and raises HostsUpdatedInterrupt, so nothing committed is lost; the
// drained worker then leaves the job with status 0, its host is removed, and the others go on
// without it. Asks for a drain from the program itself, as SIGTERM does (e.g. on a cloud preemption
// notice).
void request_drain();
// Whether a drain has been asked for in this process.
bool drain_requested();

// Whether this process is an elastic worker (COHORT_WORKER_ID). Needs init().
bool is_elastic();

// How many resets this process has gone through (0 outside elastic mode). Needs init().
int resets();

// The phases of the last reset, for logs and the recovery benchmark; all zero before the first.
struct ResetTimings {
  int round = 0;                            // the round joined
  int old_rank = 0;                         // the rank before the reset
  int old_size = 0;                         // the size of the world left
  int new_rank = 0;                         // the rank in the new world
  int new_size = 0;                         // the size of the new world
  std::chrono::microseconds teardown{0};    // leaving the old runtime
  std::chrono::microseconds assignment{0};  // check-in until the launcher's assignment arrived
  std::chrono::microseconds connect{0};     // building the new runtime (Gloo rendezvous, control)
};

// The phases of this process's last reset; all zero before the first. Needs init().
ResetTimings last_reset_timings();

}  // namespace cohort::elastic
