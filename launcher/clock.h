// The launcher's notion of "now": steady time, injectable so that tests of cooldowns, timeouts
// and schedules advance a fake clock instead of sleeping. A deadline becomes poll()'s timeout
// through base/deadline.h's poll_millis, as everywhere else.
#pragma once

#include <chrono>
#include <functional>

#include "base/deadline.h"

namespace cohort::discovery {

using TimePoint = SteadyClock::time_point;
using NowFn = std::function<TimePoint()>;

inline TimePoint steady_now() {
  return SteadyClock::now();
}

}  // namespace cohort::discovery
