// Rule 8 of the elastic policy (elastic_policy.h) for agent mode, where the outage is of the store
// the agents meet in (etcd) rather than of the discovery script: how long an agent waits for the
// store to answer again before it stops the job.
//
// The rule: the workers train on without the store, so an agent waits for it for as long as any
// worker of its node runs: an outage of any length costs no training. Once none runs (a worker
// that fails cannot check in without the store, and ends when its own timeouts do), the wait is
// bounded by --elastic-timeout, counted from the last answer if no worker ran since, else from the
// last time one was seen running. Where the modes differ, and why: the server-mode job is the
// store itself and cannot lose it; its discovery outage holds hosts for --elastic-timeout from the
// gap (ElasticPolicy::hold_expired), because it can see no worker of those hosts fail.
#pragma once

#include <chrono>
#include <optional>

#include "elastic_policy/elastic_policy.h"

namespace cohort::elastic_policy {

class StoreOutage {
 public:
  explicit StoreOutage(std::chrono::milliseconds elastic_timeout) : timeout_(elastic_timeout) {}

  struct Verdict {
    bool began = false;  // this read began the outage: report it
    bool stop = false;   // no worker ran for --elastic-timeout: stop the job
  };
  // A read found the store unreachable at `now`; it last answered at `last_answer` (the outage may
  // have begun long before this read gave up); `workers_running`: a worker of this node runs.
  Verdict unreachable(TimePoint last_answer, bool workers_running, TimePoint now);
  // The store answered: whether that ended an outage (report it).
  bool answered();
  bool ongoing() const { return since_.has_value(); }

 private:
  const std::chrono::milliseconds timeout_;
  std::optional<TimePoint> since_;  // of the current outage
  TimePoint idle_since_{};          // since when no worker of this node ran during it
};

}  // namespace cohort::elastic_policy
