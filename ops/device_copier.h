// The few CUDA services the staged backend (ops/staged_backend.h) needs, behind an interface so
// that its pipeline runs and is tested on machines without a GPU: memory on the device and pinned
// on the host, copies between them queued in order on one side stream, and markers to wait for.
// ops/cuda_copier.h implements it with the CUDA runtime; test/ops/host_copier.h with plain memory
// and a thread that plays the stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace cohort::ops {

class DeviceCopier {
 public:
  // Identifies a point in the queue: every copy queued before it.
  using Marker = uint64_t;

  virtual ~DeviceCopier() = default;

  // The device whose memory the copies read and write.
  virtual int device() const = 0;

  // `bytes` of device memory / of page-locked host memory, freed when the last owner lets go.
  // Throw InternalError naming the failed call. Zero bytes give nullptr.
  virtual std::shared_ptr<void> allocate_device(size_t bytes) = 0;
  virtual std::shared_ptr<void> allocate_host(size_t bytes) = 0;

  // Queue a copy behind every copy queued before; they return at once. The first copy of a
  // collective starts only after the work queued on the legacy default stream before it.
  virtual void to_host(void* host, const void* device, size_t bytes) = 0;
  virtual void to_device(void* device, const void* host, size_t bytes) = 0;

  // A marker after every copy queued so far.
  virtual Marker mark() = 0;
  // Blocks until every copy before `marker` has finished. Throws InternalError naming the failed
  // call, or when it takes longer than the copier's timeout.
  virtual void wait(Marker marker) = 0;
  // wait(mark()): nothing is in flight when it returns.
  virtual void synchronize() = 0;

  // A copier of its own on the same device (for a split's backend).
  virtual std::unique_ptr<DeviceCopier> another() const = 0;
};

}  // namespace cohort::ops
