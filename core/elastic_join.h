// The one call from core into the elastic layer: init() in an elastic worker joins the job's
// first round through it. Declared here and defined by elastic/ (elastic/round_entry.cc), which
// libcohort always contains, so that core includes nothing of elastic/ (the way LevelDB's Env is
// declared by the library and defined by the port it is built with).
#pragma once

#include <memory>

#include "core/config.h"
#include "core/runtime.h"

namespace cohort::detail {

// Checks in with the launcher as entry 0 and returns the Runtime of the round it assigns.
std::shared_ptr<Runtime> join_elastic_job(const Config& config);

}  // namespace cohort::detail
