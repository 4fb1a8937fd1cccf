// What the engine needs from a backend on CUDA device memory beyond ops::Backend: sums with a
// factor applied on the device, and memory for results whose size is known only after
// negotiation. The engine has no kernels of its own, so it cannot scale device data or fill it;
// the device backend does both through its library. Declared without CUDA headers so that the
// engine compiles the same with and without NCCL (see ops/nccl_backend.h for the one
// implementation).
#pragma once

#include <cstddef>
#include <memory>
#include <span>

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

}  // namespace cohort::ops
