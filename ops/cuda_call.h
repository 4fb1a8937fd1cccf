// Calling the CUDA runtime: every error becomes an InternalError that names the call, and polls
// for the device pause with one growing backoff. Shared by the NCCL backend (ops/nccl_call.h) and
// the CUDA copier of the staged backend (ops/cuda_copier.h).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace cohort::ops {

// Throws InternalError "<call>: <CUDA error name>: <description>" unless `rc` is cudaSuccess.
void check_cuda(cudaError_t rc, const char* call);

// Sleeps between polls, doubling from 1 us to 100 us: a long wait costs little CPU and a short
// one little latency.
class PollBackoff {
 public:
  void pause() {
    std::this_thread::sleep_for(delay_);
    delay_ = std::min(delay_ * 2, std::chrono::microseconds(100));
  }

 private:
  std::chrono::microseconds delay_{1};
};

}  // namespace cohort::ops
