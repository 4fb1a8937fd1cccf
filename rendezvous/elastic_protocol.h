// The contract between cohortrun in elastic mode and its workers: which rendezvous keys each side
// writes and reads, and what the values say. Both sides build keys and values only through the
// functions here, so they cannot drift apart.
//
// Every elastic worker has an id that the launcher gives it once (COHORT_WORKER_ID) and that never
// changes, whatever its rank. Its n-th entry into a round (n = 0, 1, ...) goes like this:
//
//   worker:   SET  elastic/checkin/<id>/<n> = CheckIn      ("I am ready for my n-th round")
//   launcher: SET  elastic/assign/<id>/<n>  = Assignment   (the round, rank and size, or "exit")
//   worker:   GET  elastic/assign/<id>/<n>  (the server waits; bounded by the elastic timeout)
//   workers:  build the Gloo context in scope round_scope(round), as the static job does in ""
//
// The launcher publishes an assignment only when every live worker it wants in the round has
// checked in, so a worker never waits on a peer that is not coming. A worker that leaves a round
// (a collective failed, or the hosts changed) checks in with n + 1; the reason it gives is for the
// launcher's log and for deciding whether to wait for the others (see CheckIn).
//
// A round given up while it forms: when a member of the current round dies or checks in again
// (it left the round), the launcher sets elastic/abandon/<round> = the reason. Workers still
// building that round's connections watch the key (elastic/round_watch.h) and stop at once instead
// of waiting out their timeouts for a peer that is not coming; they then check in with n + 1 like
// any worker whose round broke. Members already past joining learn it from their heartbeat. The
// launcher also sets the key of a round when it plans the next one ("superseded"), which ends the
// watchers' requests that the round's members left waiting on the server.
//
// Host changes: the launcher sets elastic/notice/<g> for g = 1, 2, ... Each assignment carries the
// generation g that was current when it was made. At a commit, rank 0 asks (without waiting)
// whether notice g + 1 exists and broadcasts the answer, so every rank raises
// HostsUpdatedInterrupt at the same commit.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/placement.h"

namespace cohort::rendezvous {

// The rendezvous scope of the elastic keys above; it lives as long as the job.
inline constexpr const char* kElasticScope = "elastic";

// The scope in which the workers of round `round` build their Gloo context.
std::string round_scope(int round);

std::string checkin_key(std::string_view worker_id, int entry);
std::string assign_key(std::string_view worker_id, int entry);
std::string notice_key(int generation);
std::string abandon_key(int round);

struct CheckIn {
  enum class Kind {
    kStart,        // a new worker, entry 0
    kFailed,       // a collective failed: the launcher waits a bounded time for the others
    kInterrupted,  // HostsUpdatedInterrupt: the others are coming too
    kDrained,      // it was asked to leave (SIGTERM) and has left at a commit: remove its host
  };
  Kind kind = Kind::kStart;
  std::string reason;  // free text for the log; may be empty
};

std::string format_checkin(const CheckIn& checkin);
// Throws InvalidArgument for text that is not a check-in.
CheckIn parse_checkin(std::string_view text);

struct Assignment {
  bool exit = false;  // the worker is not in the job any more: it leaves with status 0
  int round = 0;
  Placement placement;  // the worker's rank and size in the round, and its place among hosts
  int generation = 0;   // the host-notice generation when the round was planned
};

// "round=3 rank=0 size=4 local_rank=0 local_size=4 cross_rank=0 cross_size=1 generation=2", or
// "exit".
std::string format_assignment(const Assignment& assignment);
// Throws InvalidArgument for a malformed or inconsistent assignment (rank outside [0, size), ...).
Assignment parse_assignment(std::string_view text);

}  // namespace cohort::rendezvous
