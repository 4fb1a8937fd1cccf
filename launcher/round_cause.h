// Why a round was needed, for its "round" event (docs/operations.md): the cause and reason that
// came first since the last round, and how long the job took to recover from it. One
// implementation for both elastic modes; each notes the causes it learns of in its own way.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "launcher/clock.h"

namespace cohort::discovery {

class RoundCause {
 public:
  // Why the next round is needed: "failure", "worker_left", "worker_finished", "hosts_changed",
  // "drain". The first since the last round counts, but "worker_left" gives way to any other.
  void note(const char* cause, const std::string& why, TimePoint now = steady_now());
  // The "cause", "reason" and (after a noted cause) "recovery_seconds" fields of the round
  // published `now`; the next round starts with none noted.
  nlohmann::json take(TimePoint now = steady_now());
  // The cause noted so far, as "<cause> <reason>" (what adopt takes); empty if none.
  std::string noted() const { return cause_.empty() ? "" : cause_ + " " + reason_; }
  // Names the next round as `noted` (another's noted()) says, whatever this one noted; the
  // recovery still counts from this one's first note since the last round (from `now` if none;
  // the first round has none). Ignores text that is not "<cause> <reason>".
  void adopt(const std::string& noted, TimePoint now = steady_now());

 private:
  std::string cause_ = "start", reason_ = "the first round";
  std::optional<TimePoint> cause_at_;  // when the cause was noted: the recovery starts
};

}  // namespace cohort::discovery
