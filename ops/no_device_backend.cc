// The device backend of a build without the CUDA toolkit: none; device tensors are refused.
#include "cohort/errors.h"
#include "ops/device_backend.h"

namespace cohort::ops {

void require_device_backend(const std::string& what) {
  throw InvalidArgument(what + "a CUDA device tensor, but this Cohort was built without CUDA");
}

std::unique_ptr<DeviceBackend> make_device_backend(Backend&, int cuda_device,
                                                   std::chrono::milliseconds,
                                                   const DeviceOptions&) {
  require_device_backend("device " + std::to_string(cuda_device) + ": ");
  return nullptr;  // not reached
}

}  // namespace cohort::ops
