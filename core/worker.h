// The role of every rank but 0 (core/role.h): it sends rank 0 its new requests (as response-cache
// hits where it can, core/response_cache.h) and runs the ResponseLists rank 0 sends back, in
// order. An abort notice from rank 0 fails it with rank 0's reason. With host leaders
// (COHORT_CONTROL_LEADERS) its messages go to its host's leader instead, which forwards them
// (core/leader.h), and a leader runs its own share of the work through a Worker too.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/control_channel.h"
#include "core/executor.h"
#include "core/response_cache.h"
#include "core/role.h"

namespace cohort {

class Worker final : public Role {
 public:
  // `control` and `executor` are the Runtime's, which outlive this role. `upstream` is the rank
  // its control connection reaches: rank 0, or its host's leader.
  Worker(ControlChannel& control, Executor& executor, int upstream = 0)
      : control_(control), executor_(executor), upstream_(upstream) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  bool step(std::vector<ControlMessage> messages, std::vector<Request> fresh,
            bool shutdown) override;
  std::chrono::microseconds wait_timeout(std::chrono::microseconds idle) const override {
    return idle;
  }
  // Rank 0 hears of it from the heartbeat and the closed connection.
  void on_fail(const std::string&) override {}

  // This cycle's RequestList, encoded, or nothing when there is nothing to send.
  std::vector<std::byte> next_list(std::vector<Request> fresh, bool shutdown);
  // Applies one ResponseList from rank 0 (`payload`) and runs it; returns whether it was the
  // last. Throws InternalError with rank 0's reason for an abort notice.
  bool apply(std::span<const std::byte> payload);

 private:
  ControlChannel& control_;
  Executor& executor_;
  int upstream_;
  CacheView cache_view_;
  bool shutdown_announced_ = false;
};

}  // namespace cohort
