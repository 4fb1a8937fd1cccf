// The rule that ties COHORT_TIMEOUT_SECONDS to COHORT_PEER_TIMEOUT_SECONDS, in one place for the
// runtime's Config (core/config.cc) and for cohortrun's check of its workers' timeouts
// (elastic_job/elastic_timeouts.cc): the collectives' timeout must be longer than the heartbeat's,
// so that a dead or frozen peer is named by the heartbeat before a collective merely times out.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace cohort::env {

struct PeerTimeouts {
  std::chrono::milliseconds timeout{30'000};  // COHORT_TIMEOUT_SECONDS
  std::chrono::microseconds peer{5'000'000};  // COHORT_PEER_TIMEOUT_SECONDS
  bool timeout_set = false;                   // by the user, not the default
  bool peer_set = false;
};

// Makes `t.timeout > t.peer` hold. Where only one of the two was set, the other is fitted to it
// (the peer timeout lowered to half the timeout, or the timeout raised to twice the peer timeout)
// and the returned warning names both; where both were set and break the rule, throws
// InvalidArgument naming both. Nothing is returned when nothing changed.
std::optional<std::string> fit_peer_timeouts(PeerTimeouts& t);

}  // namespace cohort::env
