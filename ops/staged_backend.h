// The staged data plane: every Backend operation on device memory, run by the process set's host
// backend (shared memory on one host, Gloo across hosts) on copies in page-locked host memory.
// Chosen where NCCL cannot serve (ranks sharing a GPU, a build without NCCL, or
// COHORT_DEVICE_OPERATIONS=staged: ops/device_backend.h). It needs no kernels of its own: the
// device is only read and written by copies (ops/device_copier.h).
//
// allreduce and broadcast are pipelined in chunks of `chunk_bytes`: while the host reduces chunk
// k, the side stream copies chunk k+1 to the host and chunk k-1 back to the device, so a call
// costs about one device round trip of a chunk more than the host collective itself. The other
// operations copy their input whole, run the host collective, and copy the result back.
//
// Ordering contract as the NCCL backend's: the copies start after the work queued on the legacy
// default stream before the call, work on other streams must be finished by the caller, and the
// call returns when the result is in device memory. Nothing stays in flight when a call throws.
// Every wait on a peer is the host backend's, bounded by its timeout; every copy wait by the
// copier's. CUDA errors are InternalErrors naming the call.
//
// Scaled sums add on the host and then multiply by the factor (ops::scale: 16-bit types in
// float), for floating-point types only (InvalidArgument otherwise, as NCCL's PreMulSum).
// The pinned staging buffers belong to the backend: two chunk slots, and one that grows to the
// largest whole-copy operation; they are freed with it.
#pragma once

#include <cstddef>
#include <memory>

#include "ops/device_backend.h"
#include "ops/device_copier.h"

namespace cohort::ops {

// The staged backend over `host`'s ranks, numbered as `host`. `host` must outlive it and must not
// be used concurrently with it; abort() forwards to it. split() splits `host` (keyed apart from
// the caller's own splits of it) and gives the new backend `copier->another()`.
std::unique_ptr<DeviceBackend> make_staged_backend(Backend& host,
                                                   std::unique_ptr<DeviceCopier> copier,
                                                   size_t chunk_bytes = size_t{4} << 20);

}  // namespace cohort::ops
