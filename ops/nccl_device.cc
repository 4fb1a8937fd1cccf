// The NCCL half of the device factory of a build with NCCL.
#include "ops/nccl_device.h"

#include "ops/nccl_backend.h"

namespace cohort::ops {

bool nccl_built() {
  return true;
}

std::unique_ptr<DeviceBackend> make_nccl_device(Backend& bootstrap, int cuda_device,
                                                std::chrono::milliseconds timeout) {
  return make_nccl_backend(bootstrap, cuda_device, timeout);
}

}  // namespace cohort::ops
