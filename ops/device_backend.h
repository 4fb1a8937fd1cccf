// What the engine needs from a backend on CUDA device memory beyond ops::Backend: sums with a
// factor applied on the device, and memory for results whose size is known only after
// negotiation. The engine has no kernels of its own, so it cannot scale device data or fill it;
// the device backend does both through its library. Declared without CUDA headers so that the
// engine compiles the same with and without NCCL.
//
// Which implementations a build has is CMake's choice, not the engine's (the way LevelDB picks
// env_posix): with the CUDA toolkit, the target cohort_device holds device_factory.cc, which
// chooses per process set between NCCL (ops/nccl_backend.h, where NCCL was found too) and the
// staged backend (ops/staged_backend.h); without it, no_device_backend.cc, which refuses device
// tensors with one message.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

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

// COHORT_DEVICE_OPERATIONS: how collectives on device memory run. kAuto: NCCL where this build
// has it and every rank of the process set has a GPU of its own, the staged backend otherwise.
enum class DeviceOperations { kAuto, kNccl, kStaged };
std::string_view to_string(DeviceOperations operations);

struct DeviceOptions {
  DeviceOperations operations = DeviceOperations::kAuto;
  // COHORT_STAGED_CHUNK_BYTES: the staged backend's pipeline step (ops/staged_backend.h).
  size_t staged_chunk_bytes = size_t{4} << 20;
};

// Returns if this build can run collectives on device tensors; otherwise throws InvalidArgument:
// `what` (which names the collective) followed by the reason.
void require_device_backend(const std::string& what);

// Collective over `bootstrap`'s ranks: the device backend over them on `cuda_device`. The ranks
// exchange their host name and GPU's UUID over `bootstrap` and decide alike (ops/device_choice.h)
// between NCCL (ops/nccl_backend.h) and the staged backend over `bootstrap` itself
// (ops/staged_backend.h); rank 0 logs the choice and why. Every rank throws alike: InternalError
// naming the ranks whose device is unusable, InvalidArgument where `options` asks for NCCL that
// this build lacks or that ranks sharing a GPU cannot use. A build without CUDA throws
// InvalidArgument as require_device_backend(). `bootstrap` must outlive the result.
std::unique_ptr<DeviceBackend> make_device_backend(Backend& bootstrap, int cuda_device,
                                                   std::chrono::milliseconds timeout,
                                                   const DeviceOptions& options = {});

}  // namespace cohort::ops
