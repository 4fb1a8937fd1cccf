// The clock every timeout is measured on, and the one conversion from a deadline to poll()'s
// timeout, so that no wait rounds its own way.
#pragma once

#include <algorithm>
#include <chrono>

namespace cohort {

// Steady: a wall clock set back or forward moves no deadline.
using SteadyClock = std::chrono::steady_clock;

// Milliseconds from `now` until `deadline` for poll(): 0 once it has passed, -1 (wait forever)
// for time_point::max(), otherwise rounded up, so that a poll never wakes just before the
// deadline and times out early, and capped to fit an int.
inline int poll_millis(SteadyClock::time_point now, SteadyClock::time_point deadline) {
  if (deadline <= now) return 0;  // before subtracting: min() - now would overflow
  if (deadline == SteadyClock::time_point::max()) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return static_cast<int>(std::min<long long>(left, 1 << 30));
}

inline int poll_millis(SteadyClock::time_point deadline) {
  return poll_millis(SteadyClock::now(), deadline);
}

}  // namespace cohort
