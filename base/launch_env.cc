#include "base/launch_env.h"

#include <cstdlib>

namespace cohort::env {

std::optional<std::string> process_getenv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

bool launched_by_mpirun(const Getenv& getenv) {
  return getenv(kOmpiWorldSize) || getenv(kPmixRank);
}

Launcher detect_launcher(const Getenv& getenv) {
  if (getenv(kRank) || getenv(kWorkerId)) return Launcher::kCohortrun;
  if (launched_by_mpirun(getenv)) return Launcher::kMpirun;
  return Launcher::kNone;
}

}  // namespace cohort::env
