#include "core/fault_injection.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <chrono>

#include "base/decimal.h"
#include "cohort/errors.h"

namespace cohort {

FaultPoint parse_fault_point(std::string_view text) {
  bool stop = text.starts_with(kStopPrefix);
  if (stop) text.remove_prefix(kStopPrefix.size());
  auto first = text.find(':');
  auto second = first == std::string_view::npos ? first : text.find(':', first + 1);
  if (second == std::string_view::npos) {
    throw InvalidArgument("expected [stop:]PHASE[#N]:ENTRY:WORKER");
  }
  FaultPoint point{std::string(text.substr(0, first)), 0, std::string(text.substr(second + 1)),
                   stop};
  if (auto hash = point.phase.find('#'); hash != std::string::npos) {
    std::string count = point.phase.substr(hash + 1);
    auto n = parse_decimal<int>(count, 1, 1'000'000);
    if (!n)
      throw InvalidArgument("the occurrence after '#' " + decimal_refusal(count, 1, 1'000'000));
    point.occurrence = *n;
    point.phase.resize(hash);
  }
  if (std::find(std::begin(kFaultPhases), std::end(kFaultPhases), point.phase) ==
      std::end(kFaultPhases)) {
    std::string known;
    for (std::string_view phase : kFaultPhases)
      known += (known.empty() ? "" : ", ") + std::string(phase);
    throw InvalidArgument("unknown phase '" + point.phase + "' (" + known + ")");
  }
  std::string entry(text.substr(first + 1, second - first - 1));
  auto value = parse_decimal<int>(entry, 0, 1'000'000);
  if (!value) throw InvalidArgument("entry " + decimal_refusal(entry, 0, 1'000'000));
  point.entry = *value;
  if (point.worker_id.empty()) throw InvalidArgument("the worker id is empty");
  return point;
}

void maybe_inject_fault(const std::optional<FaultPoint>& point, std::string_view worker_id,
                        std::string_view phase, int entry, int occurrence) {
  if (!point || point->phase != phase || point->entry != entry || point->worker_id != worker_id ||
      point->occurrence != occurrence) {
    return;
  }
  auto now = std::chrono::system_clock::now().time_since_epoch();
  std::fprintf(stderr, "cohort: COHORT_FAULT_KILL_AT: worker %s %s at %s of entry %d at %.3f\n",
               point->worker_id.c_str(), point->stop ? "stopped" : "killed", point->phase.c_str(),
               entry, std::chrono::duration<double, std::milli>(now).count());
  std::fflush(stderr);
  std::raise(point->stop ? SIGSTOP : SIGKILL);
}

}  // namespace cohort
