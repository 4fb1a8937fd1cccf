// The launcher's notion of "now": steady time, injectable so that tests of cooldowns, timeouts
// and schedules advance a fake clock instead of sleeping.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>

namespace cohort::discovery {

using SteadyClock = std::chrono::steady_clock;
using TimePoint = SteadyClock::time_point;
using NowFn = std::function<TimePoint()>;

inline TimePoint steady_now() {
  return SteadyClock::now();
}

// Milliseconds from `now` to `deadline` for poll(): 0 once it has passed, rounded up so a poll
// never wakes just before the deadline, capped to fit an int.
inline int poll_millis(TimePoint now, TimePoint deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

}  // namespace cohort::discovery
