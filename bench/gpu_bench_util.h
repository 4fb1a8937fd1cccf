// What the GPU benchmarks (bench/gpu/*.sh's programs) share: CUDA errors as a named exit, the
// message sizes they sweep, and the skip (exit 77, one line) where no CUDA device is usable.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cohort::bench {

// Exits 1 naming `program`, the call and CUDA's error, unless `rc` is success.
inline void cuda_ok(const char* program, cudaError_t rc, const char* call) {
  if (rc == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s: %s\n", program, call, cudaGetErrorString(rc));
  std::exit(1);
}

// 8 B, ×4 up to max_bytes (and max_bytes itself); --quick: three sizes.
inline std::vector<size_t> gpu_bench_sizes(bool quick, size_t max_bytes) {
  if (quick) return {8, 64u << 10, 16u << 20};
  std::vector<size_t> all;
  for (size_t s = 8; s <= max_bytes; s *= 4) all.push_back(s);
  if (all.back() != max_bytes) all.push_back(max_bytes);
  return all;
}

// True, after printing "<program>: skipped: ..." for the caller to exit 77, when no CUDA device
// is usable; leaves no CUDA error behind.
inline bool no_usable_gpu(const char* program) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) return false;
  cudaGetLastError();
  std::printf("%s: skipped: no usable CUDA device\n", program);
  return true;
}

}  // namespace cohort::bench
