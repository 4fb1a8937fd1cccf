// The process's one Runtime (held by core/api.cc), reached from the elastic layer, which replaces
// it at a reset without going through shutdown() and init().
#pragma once

#include <memory>

#include "core/runtime.h"

namespace cohort::detail {

// The Runtime in use; throws NotInitialized before init() and after shutdown().
std::shared_ptr<Runtime> current_runtime();
// Empties the slot and returns what was in it (nullptr if nothing). Calls from other threads
// meanwhile throw NotInitialized.
std::shared_ptr<Runtime> take_runtime();
// Fills the empty slot; throws InvalidArgument if it is not empty.
void install_runtime(std::shared_ptr<Runtime> runtime);

}  // namespace cohort::detail
