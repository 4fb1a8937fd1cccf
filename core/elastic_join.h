// The one call from core into the elastic layer: init() in an elastic worker joins the job's
// first round through it. Declared here and defined by elastic/ (elastic/round_entry.cc), which
// libcohort always contains, so that core includes nothing of elastic/ (the way LevelDB's Env is
// declared by the library and defined by the port it is built with).
#pragma once

#include <memory>

#include "core/config.h"
#include "core/runtime.h"

namespace cohort::detail {

// Checks in with the launcher and returns the Runtime of the round it assigns: as entry 0 at the
// process's first init() (`generation` 0); after a shutdown(), as the entry after the last one
// this process entered, like a reset, so the launcher plans a fresh round for it.
std::shared_ptr<Runtime> join_elastic_job(const Config& config, int generation);

}  // namespace cohort::detail
