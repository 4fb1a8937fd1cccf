// Why agent mode needed its next round, in the words of the elastic job's "round" events
// (launcher/round_cause.h): what an agent reads in etcd about the members of the last round.
// Pure: every agent classifies the same snapshot the same way, so their event logs and metrics
// agree on the cause whoever planned the round.
#pragma once

#include <optional>
#include <string>

#include "agent/agent_view.h"

namespace cohort::discovery {

struct AgentCause {
  const char* cause = "";  // "failure", "drain", "worker_finished", "hosts_changed", "worker_left"
  std::string why;
  bool operator==(const AgentCause& o) const {
    return std::string(cause) == o.cause && why == o.why;
  }
};

// What `s` says made a round after `round` necessary, the weightiest first: a member failed (its
// exit was not 0, or its node is gone), drained, finished; a worker outside it is ready to join; a
// member left it (checked in again). Nothing if none of these happened.
std::optional<AgentCause> round_cause(const AgentRound& round, const AgentSnapshot& s);

}  // namespace cohort::discovery
