#include "cohortrun/worker_files.h"

#include <algorithm>
#include <cstdlib>

#include "base/safe_write.h"
#include "cohort/errors.h"

namespace cohort::discovery {

bool rank0_may_run_here(const std::vector<HostSlots>& hosts) {
  return std::any_of(hosts.begin(), hosts.end(),
                     [](const HostSlots& h) { return is_local_host(h.host); });
}

void check_worker_files(bool flag_given) {
  const char* timeline = std::getenv("COHORT_TIMELINE");
  if (timeline == nullptr || *timeline == '\0') return;
  try {
    files::check_replaceable(timeline);
  } catch (const Error& e) {
    throw InvalidArgument(std::string(flag_given ? "--timeline-filename" : "COHORT_TIMELINE") +
                          ": " + e.what() + " (checked before any worker started)");
  }
}

}  // namespace cohort::discovery
