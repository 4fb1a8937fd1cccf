// The NCCL half of the device factory (ops/device_factory.cc), picked by CMake: nccl_device.cc
// where NCCL was found, no_nccl_device.cc where only the CUDA toolkit was. Internal to ops/.
#pragma once

#include <chrono>
#include <memory>

#include "ops/device_backend.h"

namespace cohort::ops {

// Whether this build has the NCCL backend.
bool nccl_built();

// make_nccl_backend (ops/nccl_backend.h); never called where nccl_built() is false.
std::unique_ptr<DeviceBackend> make_nccl_device(Backend& bootstrap, int cuda_device,
                                                std::chrono::milliseconds timeout);

}  // namespace cohort::ops
