// Fault injection for tests and benchmarks: COHORT_FAULT_KILL_AT=PHASE:ENTRY:WORKER makes the
// elastic worker with id WORKER kill itself with SIGKILL when it reaches PHASE of its round entry
// ENTRY (0 = its first round, n = after its n-th reset); with the prefix `stop:` it stops itself
// with SIGSTOP instead, as a frozen process would; PHASE#N (N >= 1) waits for the N-th time the
// phase is reached in that entry (a commit's phases come once per commit). Real processes then
// die at exactly the point a test wants (a worker that dies while the next round forms), with no
// timing guesses.
// The line it prints first gives the wall-clock time of the kill, for recovery benchmarks.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cohort {

// Where, in an elastic worker's entry into a round, a fault can be injected, in order.
//   checkin     before it checks in           assignment  once its assignment has come
//   gloo-store  before Gloo's rendezvous      gloo-pairs  once its Gloo addresses are published
//   shared-memory  before the segment of ranks sharing a host (ops/shm_backend.h), if it has one
//   control     before the control star       heartbeat   before the heartbeat star
//   sync        before elastic::run's state sync that follows the entry
//   collective  as its first collective of the entry starts to run (the other ranks are in it)
// and, where the State holds sharded values (state/shard_sync.h), in any of its commits:
//   replicas    as the commit's replica transfer starts (the other ranks are in it)
//   promote     once its replica transfer started: the replicas on their way (with
//               COHORT_STATE_OVERLAP_DISABLE=1: once they arrived, before the barrier that
//               counts the commit)
// and in the sync:
//   reshard     as the transfer of the ranges that changed holder starts
inline constexpr std::string_view kFaultPhases[] = {
    "checkin",   "assignment", "gloo-store", "gloo-pairs", "shared-memory", "control",
    "heartbeat", "sync",       "collective", "replicas",   "promote",       "reshard"};
inline constexpr std::string_view kStopPrefix = "stop:";

struct FaultPoint {
  std::string phase;
  int entry = 0;
  std::string worker_id;
  bool stop = false;   // SIGSTOP rather than SIGKILL
  int occurrence = 1;  // the occurrence-th time the phase is reached in the entry (PHASE#N)
};

// Throws InvalidArgument (without naming the variable: the caller does) for text that is not
// PHASE[#N]:ENTRY:WORKER with a known phase, an entry >= 0 and N >= 1.
FaultPoint parse_fault_point(std::string_view text);

// Kills (or stops) this process if `point` is this worker at `phase` of `entry`, reached for the
// `occurrence`-th time in it; otherwise returns.
void maybe_inject_fault(const std::optional<FaultPoint>& point, std::string_view worker_id,
                        std::string_view phase, int entry, int occurrence = 1);

}  // namespace cohort
