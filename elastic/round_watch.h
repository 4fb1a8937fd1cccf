// While an elastic worker joins a round, watches the launcher for the notice that the round was
// abandoned (rendezvous/elastic_protocol.h: a member died or left it while it formed), and cancels
// the joining when it comes. Without it, the survivors waited in Gloo's connect, the control and
// heartbeat accepts for a peer that had died, each for a whole COHORT_TIMEOUT_SECONDS.
#pragma once

#include <thread>

#include "base/cancellation.h"
#include "core/config.h"

namespace cohort::elastic::detail {

class RoundWatch {
 public:
  // Starts watching round `round` over a connection of its own to the launcher in `config`.
  RoundWatch(const Config& config, int round);
  // Stops watching: ends the watcher's request at once and joins it.
  ~RoundWatch();
  RoundWatch(const RoundWatch&) = delete;
  RoundWatch& operator=(const RoundWatch&) = delete;

  // Fires when the launcher abandons the round; its reason names the round and why.
  const Cancellation& abandoned() const { return abandoned_; }

 private:
  void watch(const Config& config, int round);

  Cancellation abandoned_;
  Cancellation done_;  // ends the watcher's request when the joining ends
  std::thread thread_;
};

}  // namespace cohort::elastic::detail
