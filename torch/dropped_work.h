// Private to the torch adapter: where a Work dropped before its collective completed goes. Its
// tensors stay alive on a background thread until the collective completes, so dropping a Work
// never blocks (as in Horovod, where a dropped handle's collective completes on its own); the
// result, or error, is discarded.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <vector>

#include "cohort/cohort.h"

namespace cohort::torch::detail {

// What a dropped Work still holds: the running collective and everything it reads or writes.
struct DroppedWork {
  Handle handle;
  std::vector<at::Tensor> keep;
  std::function<std::vector<at::Tensor>(const Handle&)> finish;  // holds tensors too; never run
};

// Keeps `work` alive until its collective completes (or fails), then releases it; never blocks.
void keep_until_done(DroppedWork work);

}  // namespace cohort::torch::detail
