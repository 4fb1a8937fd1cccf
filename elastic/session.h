// An elastic worker's session: its connection to the launcher, the round it is in and how it got
// there. Kept with the round's Runtime as its attachment (core/runtime.h), so it is dropped with
// that Runtime unless a reset hands it on to the next one.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "cohort/elastic/run.h"
#include "core/runtime.h"
#include "rendezvous/elastic_protocol.h"
#include "rendezvous/store.h"

namespace cohort::elastic::detail {

struct Session final : RuntimeAttachment {
  // The launcher's store, scope rendezvous::kElasticScope.
  std::shared_ptr<rendezvous::Store> launcher;
  // Where rank 0 looks for host notices at each commit: the launcher's store, or on etcd the
  // same store with short requests, so that an etcd outage delays a commit by seconds, not by a
  // whole COHORT_TIMEOUT_SECONDS (in which the other ranks' broadcast would time out).
  std::shared_ptr<rendezvous::Store> notices;
  // How long that store may stay unreachable before the round breaks: none for the launcher's
  // server (a launcher that does not answer has gone), COHORT_ELASTIC_TIMEOUT_SECONDS on etcd,
  // which agents expect to come back (docs/agents.md).
  std::chrono::milliseconds outage_limit{0};
  std::optional<std::chrono::steady_clock::time_point> unreachable_since;
  // This round's entry index n (elastic_protocol.h): also the number of resets so far.
  int entry = 0;
  rendezvous::Assignment assignment;
  ResetTimings last_reset;  // all zero before the first reset
  // When rank 0 last reported the job's progress.
  std::optional<std::chrono::steady_clock::time_point> progress_sent_at;
  // elastic::run's restores from a durable checkpoint so far (carried from round to round):
  // how many, and the last one's checkpoint sequence and commit, for rank 0's progress report.
  struct Restores {
    uint64_t count = 0, sequence = 0, commit = 0;
  } restores;
};

// The session `runtime` belongs to; nullptr outside elastic mode.
inline Session* session_of(const Runtime& runtime) {
  return dynamic_cast<Session*>(runtime.attachment());
}

}  // namespace cohort::elastic::detail
