// What rank 0 decides in one cycle, without the sockets or the execution: it takes every rank's
// RequestList, its own requests included, negotiates them (core/negotiator.h) with the response
// cache's ids (core/response_cache.h), inspects stalls, records the negotiation in the timeline,
// and hands back the next ResponseList, ready to encode. The Coordinator (core/coordinator.h)
// sends that list to every other rank and runs it; bench/scale/coordinator_bench drives this class
// alone with thousands of simulated ranks.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "core/config.h"
#include "core/control_channel.h"
#include "core/negotiator.h"
#include "core/request.h"
#include "core/response_cache.h"
#include "core/timeline.h"

namespace cohort {

class Coordination {
 public:
  // `config` and `timeline` outlive this object.
  Coordination(const Config& config, int size, Timeline& timeline);
  Coordination(const Coordination&) = delete;
  Coordination& operator=(const Coordination&) = delete;

  // One cycle (the arguments are Role::step's): the list to send every rank and run, its cache
  // ids announced (ResponseCache::sending), or nullopt when there is nothing to send.
  std::optional<ResponseList> cycle(std::vector<ControlMessage> messages,
                                    std::vector<Request> fresh, bool shutdown);

 private:
  using Clock = std::chrono::steady_clock;

  // Takes one worker's RequestList.
  void receive(const ControlMessage& message);
  void negotiate(int rank, Request request);
  // A cache hit (RequestList::hits), counted without a Request (Negotiator::hit).
  void count_hit(int rank, uint32_t hit);
  // The same for a rank's hits without the timeline, runs of consecutive ids at a time.
  void count_runs(int rank, const std::vector<uint32_t>& hits);
  // The next ResponseList: what is ready, and what the stall inspector gave up on.
  ResponseList decide();
  void inspect_stalls(std::vector<Response>& responses);

  const Config& config_;
  Timeline& timeline_;
  ResponseCache cache_;
  Negotiator negotiator_;  // refers to cache_
  bool shutdown_announced_ = false;
  Clock::time_point next_stall_check_;
};

}  // namespace cohort
