#include "ops/nccl_call.h"

#include <algorithm>
#include <string>
#include <thread>

#include "cohort/errors.h"

namespace cohort::ops {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void timed_out(const char* what, std::chrono::milliseconds timeout) {
  throw InternalError(std::string("NCCL ") + what + " did not complete within " +
                      std::to_string(timeout.count()) +
                      " ms (a peer may have died or stopped answering)");
}

void check_not_aborted(const std::atomic<bool>* aborted, const char* what) {
  if (aborted != nullptr && aborted->load()) {
    throw InternalError(std::string("NCCL ") + what + " was interrupted by abort()");
  }
}

// Throws on an asynchronous error; returns whether the communicator is still busy.
bool comm_busy(ncclComm_t comm, const char* what) {
  ncclResult_t state = ncclSuccess;
  check_nccl(ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError", comm);
  if (state == ncclInProgress) return true;
  check_nccl(state, what, comm);
  return false;
}

}  // namespace

void check_nccl(ncclResult_t rc, const char* call, ncclComm_t comm) {
  if (rc == ncclSuccess || rc == ncclInProgress) return;
  std::string message = std::string(call) + ": " + ncclGetErrorString(rc);
  const char* detail = ncclGetLastError(comm);
  if (detail != nullptr && *detail != '\0') message += std::string(" (") + detail + ")";
  throw InternalError(message);
}

void wait_comm_ready(ncclComm_t comm, std::chrono::milliseconds timeout, const char* what,
                     const std::atomic<bool>* aborted) {
  auto deadline = Clock::now() + timeout;
  PollBackoff backoff;
  while (comm_busy(comm, what)) {
    check_not_aborted(aborted, what);
    if (Clock::now() > deadline) timed_out(what, timeout);
    backoff.pause();
  }
}

void wait_stream(ncclComm_t comm, cudaStream_t stream, std::chrono::milliseconds timeout,
                 const char* what, const std::atomic<bool>* aborted) {
  auto deadline = Clock::now() + timeout;
  PollBackoff backoff;
  for (;;) {
    cudaError_t rc = cudaStreamQuery(stream);
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) check_cuda(rc, "cudaStreamQuery");
    comm_busy(comm, what);  // a peer's failure shows here while the stream waits for it
    check_not_aborted(aborted, what);
    if (Clock::now() > deadline) timed_out(what, timeout);
    backoff.pause();
  }
}

}  // namespace cohort::ops
