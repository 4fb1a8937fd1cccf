// The NCCL half of the device factory of a build with the CUDA toolkit but without NCCL: none.
#include "cohort/errors.h"
#include "ops/nccl_device.h"

namespace cohort::ops {

bool nccl_built() {
  return false;
}

std::unique_ptr<DeviceBackend> make_nccl_device(Backend&, int, std::chrono::milliseconds) {
  throw InternalError("make_nccl_device: this Cohort was built without NCCL");
}

}  // namespace cohort::ops
