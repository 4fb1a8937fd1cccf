// The NCCL data plane: every Backend operation on CUDA device memory. Built only when CMake finds
// CUDA and NCCL, into the library cohort_nccl; the engine reaches it through
// ops::make_device_backend (ops/device_backend.h), never directly:
//
//   if (ops::cuda_device_available()) gpu = ops::make_nccl_backend(*cpu_backend, local_rank);
#pragma once

#include <chrono>
#include <memory>

#include "ops/cuda_copier.h"  // cuda_device_available()
#include "ops/device_backend.h"

namespace cohort::ops {

// NCCL's version code as the loaded library reports it (22809 for 2.28.9). Needs no GPU.
int nccl_version();

// Collective over `bootstrap`'s ranks (a CPU backend; every rank calls it, and the new backend
// keeps bootstrap's rank numbering): each rank prepares `cuda_device`, the ranks agree over
// `bootstrap` that all did, rank 0 makes an ncclUniqueId and broadcasts it, and every rank joins
// the communicator. If any rank cannot prepare its device (no GPU, no driver, a bad device
// number), every rank throws InternalError naming the failing ranks; none waits for the others.
//
// The backend takes device pointers on `cuda_device` and returns when the result is in memory.
// It works on one CUDA stream of its own, created with default flags, so it starts after work
// queued on the legacy default stream; work on other streams must be finished by the caller.
// Every wait (communicator set-up, each operation) is bounded by `timeout`: a dead or frozen peer
// makes the call abort the communicator and throw InternalError, and the backend is then
// unusable. abort(reason), from any thread, does the same at the operation's next poll (or at the
// next operation), naming `reason`; a new backend made afterwards works. Every NCCL and CUDA error
// becomes an InternalError naming the call.
//
// All nine Cohort types are supported; bool travels as uint8 with sum and max as max (OR) and
// product and min as min (AND), so its values must be 0 or 1. kAverage is rejected with
// InvalidArgument, as in every backend: averages and scale factors go through the
// DeviceBackend's scaled sums (PreMulSum), for floating-point types. allocate() is cudaMalloc on
// the backend's device, freed with cudaFree.
//
// `bootstrap` must outlive the returned backend and must not be used concurrently with it:
// split() first splits `bootstrap` to hand the new communicator's id to the members only
// (ncclCommSplit would need every rank of the parent, while only members call Backend::split).
std::unique_ptr<DeviceBackend> make_nccl_backend(
    Backend& bootstrap, int cuda_device,
    std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace cohort::ops
