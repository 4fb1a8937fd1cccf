// Rank 0's role (core/role.h): it takes every rank's RequestList, its own requests included,
// negotiates them (core/negotiator.h) with the response cache's ids (core/response_cache.h),
// inspects stalls, records the negotiation in the timeline, sends every other rank the resulting
// ResponseList and runs it itself. When the job fails here, it tells the others why.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/control_channel.h"
#include "core/executor.h"
#include "core/negotiator.h"
#include "core/response_cache.h"
#include "core/role.h"
#include "core/timeline.h"

namespace cohort {

class Coordinator final : public Role {
 public:
  // `control`, `executor` and `timeline` are the Runtime's, which outlive this role. The
  // timeline is shared with the executor, which records the execution in it.
  Coordinator(const Config& config, int size, ControlChannel& control, Executor& executor,
              Timeline& timeline);
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  bool step(std::vector<ControlMessage> messages, std::vector<Request> fresh,
            bool shutdown) override;
  // Short enough to inspect stalls on time even when nothing arrives.
  std::chrono::microseconds wait_timeout(std::chrono::microseconds idle) const override;
  // Announces the abort to every other rank, so that each fails with rank 0's reason.
  void on_fail(const std::string& reason) override;

 private:
  using Clock = std::chrono::steady_clock;

  // Takes one worker's RequestList.
  void receive(const ControlMessage& message);
  void negotiate(int rank, Request request);
  // The next ResponseList: what is ready, and what the stall inspector gave up on.
  ResponseList decide();
  void inspect_stalls(std::vector<Response>& responses);
  void send(ResponseList& list);

  const Config& config_;
  int size_;
  ControlChannel& control_;
  Executor& executor_;
  Timeline& timeline_;
  ResponseCache cache_;
  Negotiator negotiator_;  // refers to cache_
  bool shutdown_announced_ = false;
  Clock::time_point next_stall_check_;
};

}  // namespace cohort
