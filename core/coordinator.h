// Rank 0's role (core/role.h): each cycle it lets its Coordination (core/coordination.h) negotiate
// every rank's requests, sends every other rank the resulting ResponseList and runs it itself.
// When the job fails here, it tells the others why. With host leaders (COHORT_CONTROL_LEADERS,
// core/leader.h) "every other rank" is the ranks connected to it: the other hosts' leaders, which
// forward the list, and its own host's ranks.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/control_channel.h"
#include "core/coordination.h"
#include "core/executor.h"
#include "core/role.h"
#include "core/timeline.h"

namespace cohort {

class Coordinator final : public Role {
 public:
  // `control`, `executor` and `timeline` are the Runtime's, which outlive this role. The
  // timeline is shared with the executor, which records the execution in it.
  // `downstream`: the ranks connected to `control` (every other rank, unless there are leaders);
  // `leader_of`: each rank's host leader, or empty without leaders (Coordination's).
  Coordinator(const Config& config, int size, ControlChannel& control, Executor& executor,
              Timeline& timeline, std::vector<int> downstream, std::vector<int> leader_of = {});
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  bool step(std::vector<ControlMessage> messages, std::vector<Request> fresh,
            bool shutdown) override;
  // Short enough to inspect stalls on time even when nothing arrives.
  std::chrono::microseconds wait_timeout(std::chrono::microseconds idle) const override;
  // Announces the abort to every other rank, so that each fails with rank 0's reason.
  void on_fail(const std::string& reason) override;

  // Best effort: sends `peers` an abort notice with `reason`, so that each fails with it; a peer
  // that is gone or slow learns from the closed connection instead.
  static void notify(ControlChannel& control, const std::vector<int>& peers,
                     const std::string& reason);

 private:
  void send(const ResponseList& list);

  const Config& config_;
  std::vector<int> downstream_;
  ControlChannel& control_;
  Executor& executor_;
  Coordination coordination_;
};

}  // namespace cohort
