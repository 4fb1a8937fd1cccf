#include "rendezvous/store.h"

#include <algorithm>

namespace cohort::rendezvous {

void Store::wait(const std::vector<std::string>& keys, std::chrono::milliseconds wait,
                 const Cancellation* cancel) {
  // One deadline for all keys: waiting for each in turn with what is left of it.
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + wait;
  for (const auto& key : keys) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    get(key, std::max(left, std::chrono::milliseconds(0)), cancel);
  }
}

}  // namespace cohort::rendezvous
