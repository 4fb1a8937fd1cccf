// The handle of an asynchronous collective: wait for it, poll it, and read its output.
#pragma once

#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "cohort/types.h"

namespace cohort {

namespace detail {
struct HandleState;
}

// Returned by every *_async collective; copies share the same collective.
class Handle {
 public:
  Handle() = default;
  // Made by the runtime; programs get handles from the *_async calls.
  explicit Handle(std::shared_ptr<detail::HandleState> state);

  // The collective's name, as submitted.
  const std::string& name() const;
  // True once the collective has completed or failed; never blocks.
  bool poll() const;
  // Blocks until completion; rethrows the collective's error (MismatchError, InternalError, ...).
  void wait() const;
  // Like wait(), but gives up after `timeout`; returns false if the collective is still running.
  bool wait_for(std::chrono::milliseconds timeout) const;
  // The runtime-owned result of an allgather, alltoall or reducescatter; waits for completion.
  const OwnedTensor& output() const;
  // Alltoall: how many rows (of the first dimension) came from each rank of the process set, in
  // rank order; waits for completion.
  const std::vector<int64_t>& received_splits() const;

 private:
  std::shared_ptr<detail::HandleState> state_;
};

}  // namespace cohort
