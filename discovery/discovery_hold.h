// Holding the running workers' hosts through a gap in host discovery. A list that offers fewer
// than --min-np slots (an empty output, a partial one) is taken for a gap while workers still run
// on hosts it leaves out: those hosts stay in the job, so the workers train on and the job's
// state lives, for up to --elastic-timeout. Told to exit instead, they would take the state with
// them, and the job would restart from its first commit when the hosts came back. A list with
// enough slots ends the hold.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/clock.h"
#include "launcher/elastic_hosts.h"
#include "launcher/hosts.h"

namespace cohort::discovery {

class DiscoveryHold {
 public:
  DiscoveryHold(int min_np, std::chrono::milliseconds elastic_timeout, NowFn now = steady_now)
      : min_np_(min_np), elastic_timeout_(elastic_timeout), now_(std::move(now)) {}

  // `listed`, plus the hosts of `hosts` that it leaves out and that still run workers
  // (`running(host)`) while it offers fewer than min_np usable slots. Announces a hold's start
  // and end.
  std::vector<HostSlots> apply(const std::vector<HostSlots>& listed, const ElasticHosts& hosts,
                               const std::function<bool(const std::string& host)>& running);
  // While holding: when the hold gives up (the job then stops).
  std::optional<TimePoint> deadline() const;
  // Why the job stops, once `now` is past the deadline.
  std::optional<std::string> expired(TimePoint now) const;

 private:
  const int min_np_;
  const std::chrono::milliseconds elastic_timeout_;
  const NowFn now_;
  std::optional<TimePoint> held_since_;
};

}  // namespace cohort::discovery
