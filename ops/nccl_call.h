// Calling CUDA and NCCL: every error becomes an InternalError that names the call, and every wait
// on the device or on peers is bounded, so that a dead or frozen peer ends in an error instead of
// a thread blocked forever in cudaStreamSynchronize (Horovod #3111).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>

#include "ops/cuda_call.h"

namespace cohort::ops {

// Throws InternalError naming `call`, NCCL's error string and, given a communicator, its last
// error message. ncclInProgress passes: nonblocking communicators return it while they work.
void check_nccl(ncclResult_t rc, const char* call, ncclComm_t comm = nullptr);

// Waits until a nonblocking communicator has finished what it is doing (joining, enqueueing an
// operation, finalizing); throws InternalError on an asynchronous error or after `timeout`.
// Both waits also throw, at their next poll, once `*aborted` (when given) is true.
void wait_comm_ready(ncclComm_t comm, std::chrono::milliseconds timeout, const char* what,
                     const std::atomic<bool>* aborted = nullptr);

// Waits until everything queued on `stream` has run, checking `comm` for asynchronous errors
// (a peer's failure) meanwhile; throws InternalError on an error or after `timeout`. Polls with a
// growing pause (up to 100 us), so a long operation costs little CPU and a short one little
// latency.
void wait_stream(ncclComm_t comm, cudaStream_t stream, std::chrono::milliseconds timeout,
                 const char* what, const std::atomic<bool>* aborted = nullptr);

}  // namespace cohort::ops
