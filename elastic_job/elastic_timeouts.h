// The timeouts of an elastic job, the launcher's and the workers', and the rule that makes them
// fit together. A launcher that waits less than a healthy worker may need kills that worker; a
// worker that waits less than the launcher gives up on a job that is still coming. Checked once,
// when cohortrun starts, so a mismatch is an error naming both settings rather than a survivor
// killed in the middle of a run.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace cohort::discovery {

struct ElasticTimeouts {
  // cohortrun's flags.
  std::chrono::milliseconds checkin{10'000};   // --checkin-timeout
  std::chrono::milliseconds elastic{600'000};  // --elastic-timeout
  // The workers' variables (they inherit cohortrun's environment); defaults as in core/config.h.
  std::chrono::milliseconds worker_timeout{30'000};          // COHORT_TIMEOUT_SECONDS
  std::chrono::microseconds worker_peer_timeout{5'000'000};  // COHORT_PEER_TIMEOUT_SECONDS
  std::chrono::milliseconds worker_elastic{600'000};         // COHORT_ELASTIC_TIMEOUT_SECONDS
};

// The first rule `t` breaks, as a message naming the settings involved; nothing when they fit:
// - --checkin-timeout >= 1.5 x COHORT_PEER_TIMEOUT_SECONDS: a member of a formed round learns
//   that the round broke within the peer timeout (its heartbeat), and a member still forming it
//   at once (the launcher abandons the round); the other half covers the verdict's way to every
//   rank and the check-in itself on a loaded machine;
// - COHORT_TIMEOUT_SECONDS > COHORT_PEER_TIMEOUT_SECONDS: the heartbeat names a dead or frozen
//   peer before a collective's own timeout does (with_worker_environment fits one to the other
//   where only one is set);
// - COHORT_ELASTIC_TIMEOUT_SECONDS >= --elastic-timeout: a worker waiting for its next round
//   does not give up while the launcher still waits for hosts.
std::optional<std::string> check_elastic_timeouts(const ElasticTimeouts& t);

// `t` with the worker variables read from this process's environment (which the workers
// inherit), by the workers' own rules (base/env_value.h), and COHORT_TIMEOUT_SECONDS and
// COHORT_PEER_TIMEOUT_SECONDS fitted to each other as the workers fit them where only one is set
// (base/peer_timeouts.h); `fitted`, if given, gets the warning that says so. Throws
// InvalidArgument naming a variable whose value the workers would refuse, or both timeouts where
// both are set and inconsistent.
ElasticTimeouts with_worker_environment(ElasticTimeouts t,
                                        std::optional<std::string>* fitted = nullptr);

// What cohortrun does with its flags in `flags` when it starts: with_worker_environment, a
// warning logged where it fitted a timeout, and InvalidArgument for the first rule broken.
void check_job_timeouts(const ElasticTimeouts& flags);

}  // namespace cohort::discovery
