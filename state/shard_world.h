// The world a sharded value is laid out over: this rank, the size, every rank's host, and how
// many replicas each range has (COHORT_STATE_REPLICAS). Hosts are gathered once per runtime (a
// reset brings a new one).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace cohort {
class Runtime;
}

namespace cohort::elastic::detail {

struct ShardWorld {
  int rank = 0;
  int size = 1;
  std::vector<std::string> hosts;  // rank r's host
  int replicas = 0;                // COHORT_STATE_REPLICAS (checked against the size on use)
};

// The current world, gathered (one allgather named `collective`) the first time it is asked for
// under the current runtime, and kept until the runtime changes.
class ShardWorldCache {
 public:
  const ShardWorld& current(const std::string& collective);
  // The world gathered last, perhaps under an earlier runtime; empty hosts if none was.
  const ShardWorld& last() const { return world_; }

 private:
  std::weak_ptr<cohort::Runtime> runtime_;
  ShardWorld world_;
};

}  // namespace cohort::elastic::detail
