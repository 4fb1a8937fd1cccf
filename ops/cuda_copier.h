// The CUDA runtime behind ops/device_copier.h: cudaMalloc'd device memory, cudaMallocHost'd
// pinned memory, and cudaMemcpyAsync on one stream of the copier's own, created with default
// flags so that it starts after the work queued on the legacy default stream (as the NCCL
// backend's stream). Markers are events, waited for by polling so that every wait is bounded.
// Built only with the CUDA toolkit, into cohort_cuda.
#pragma once

#include <chrono>
#include <memory>

#include "ops/device_choice.h"
#include "ops/device_copier.h"

namespace cohort::ops {

// True when a CUDA driver is loaded and at least one device is visible. Never throws: false
// without a GPU or without a driver.
bool cuda_device_available();

// This process's host name and the UUID of `device`, or the reason (in `error`) it cannot be
// used: no driver, no such device. Never throws.
DeviceIdentity cuda_device_identity(int device);

// A copier on `device` whose every wait gives up after `timeout` with InternalError. Throws
// InternalError naming the CUDA call that failed (cudaSetDevice of a bad device, ...).
std::unique_ptr<DeviceCopier> make_cuda_copier(int device, std::chrono::milliseconds timeout);

}  // namespace cohort::ops
