#include "base/peer_timeouts.h"

#include "base/env_value.h"
#include "cohort/errors.h"

namespace cohort::env {
namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::milliseconds;

std::string seconds(microseconds d) {
  return duration_text(d, kSecondsInMicroseconds) + " s";
}

std::string timeout_text(const PeerTimeouts& t) {
  return std::string("COHORT_TIMEOUT_SECONDS ") + seconds(t.timeout) + " is not longer than " +
         (t.timeout_set && !t.peer_set ? "the default " : "") + "COHORT_PEER_TIMEOUT_SECONDS " +
         seconds(t.peer) + (t.peer_set && !t.timeout_set ? " (the default timeout)" : "");
}

}  // namespace

std::optional<std::string> fit_peer_timeouts(PeerTimeouts& t) {
  if (t.timeout > t.peer) return std::nullopt;
  std::string broken = timeout_text(t);
  if (t.timeout_set && t.peer_set) {
    throw InvalidArgument(broken +
                          ": a collective would time out before the heartbeat could name the "
                          "peer that failed; set COHORT_PEER_TIMEOUT_SECONDS below it");
  }
  if (t.peer_set) {
    // Rounded up to the timeout's milliseconds, so that it stays at least twice the peer's.
    t.timeout = duration_cast<milliseconds>(2 * t.peer + microseconds(999));
    return broken + ": COHORT_TIMEOUT_SECONDS raised to " + seconds(t.timeout) +
           ", twice COHORT_PEER_TIMEOUT_SECONDS";
  }
  t.peer = duration_cast<microseconds>(t.timeout) / 2;
  return broken + ": COHORT_PEER_TIMEOUT_SECONDS lowered to " + seconds(t.peer) +
         ", half of COHORT_TIMEOUT_SECONDS";
}

}  // namespace cohort::env
