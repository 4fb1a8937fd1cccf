// What the engine needs from a backend on CUDA device memory beyond ops::Backend: sums with a
// factor applied on the device, and memory for results whose size is known only after
// negotiation. The engine has no kernels of its own, so it cannot scale device data or fill it;
// the device backend does both through its library. Declared without CUDA headers so that the
// engine compiles the same with and without NCCL.
//
// Which implementation a build has is CMake's choice, not the engine's (the way LevelDB picks
// env_posix): the target cohort_device holds either nccl_device.cc (over ops/nccl_backend.h) or
// no_device_backend.cc, which refuses device tensors with one message.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "ops/backend.h"

namespace cohort::ops {

class DeviceBackend : public Backend {
 public:
  // In place: the sum over ranks of `factor` times each rank's elements (NCCL's PreMulSum), for
  // floating-point types only (InvalidArgument otherwise). The engine averages and applies
  // prescale and postscale as one factor, prescale × postscale (/ size for an average).
  virtual void allreduce_scaled(void* buffer, size_t count, DataType dtype, double factor) = 0;

  // reduce_scatter() with the sum of `factor` times each rank's elements, as allreduce_scaled().
  virtual void reduce_scatter_scaled(const void* input, void* output,
                                     std::span<const size_t> counts, DataType dtype,
                                     double factor) = 0;

  // `bytes` of memory on this backend's device, freed when the last owner lets go (also after the
  // backend is gone). Throws InternalError naming the CUDA error (out of memory, ...).
  virtual std::shared_ptr<void> allocate(size_t bytes) = 0;

  // The CUDA device this backend works on.
  virtual int device() const = 0;
};

// Returns if this build can run collectives on device tensors; otherwise throws InvalidArgument:
// `what` (which names the collective) followed by the reason.
void require_device_backend(const std::string& what);

// The device backend over `bootstrap`'s ranks on `cuda_device` (ops/nccl_backend.h says how it
// is made); throws InvalidArgument as require_device_backend() in a build without one.
std::unique_ptr<DeviceBackend> make_device_backend(Backend& bootstrap, int cuda_device,
                                                   std::chrono::milliseconds timeout);

}  // namespace cohort::ops
