// The device backend of a build with CUDA and NCCL: NCCL's.
#include "ops/device_backend.h"
#include "ops/nccl_backend.h"

namespace cohort::ops {

void require_device_backend(const std::string&) {}

std::unique_ptr<DeviceBackend> make_device_backend(Backend& bootstrap, int cuda_device,
                                                   std::chrono::milliseconds timeout) {
  return make_nccl_backend(bootstrap, cuda_device, timeout);
}

}  // namespace cohort::ops
