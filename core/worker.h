// The role of every rank but 0 (core/role.h): it sends rank 0 its new requests (as response-cache
// hits where it can, core/response_cache.h) and runs the ResponseLists rank 0 sends back, in
// order. An abort notice from rank 0 fails it with rank 0's reason.
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
  // `control` and `executor` are the Runtime's, which outlive this role.
  Worker(ControlChannel& control, Executor& executor) : control_(control), executor_(executor) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  bool step(std::vector<ControlMessage> messages, std::vector<Request> fresh,
            bool shutdown) override;
  std::chrono::microseconds wait_timeout(std::chrono::microseconds idle) const override {
    return idle;
  }
  // Rank 0 hears of it from the heartbeat and the closed connection.
  void on_fail(const std::string&) override {}

 private:
  // Sends rank 0 this cycle's requests and shutdown, if there is anything to send.
  void send(std::vector<Request> fresh, bool shutdown);
  // Applies one ResponseList from rank 0; returns whether it was the last.
  bool apply(const ControlMessage& message);

  ControlChannel& control_;
  Executor& executor_;
  CacheView cache_view_;
  bool shutdown_announced_ = false;
};

}  // namespace cohort
