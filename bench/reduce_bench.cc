// Throughput of reduce_into (float32 sum) against a plain `dst[i] += src[i]` loop and memcpy, in
// cache (4 MiB) and in DRAM (256 MiB). GB/s counts the bytes of dst per second. Run:
//   build/bin/reduce_bench
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "ops/reduce.h"

namespace {

// Keeps the plain loop in this file from being inlined into the timing loop and optimized away.
[[gnu::noinline]] void plain_sum(float* __restrict dst, const float* __restrict src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] += src[i];
}

// Best of several repetitions, each at least 0.2 s long.
double gbps(size_t bytes, const std::function<void()>& op) {
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    int iterations = 0;
    auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    do {
      op();
      ++iterations;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (elapsed < 0.2);
    best = std::max(best, static_cast<double>(bytes) * iterations / elapsed / 1e9);
  }
  return best;
}

}  // namespace

int main() {
  std::printf("%10s %14s %14s %14s\n", "bytes", "reduce_into", "plain loop", "memcpy");
  for (size_t bytes : {size_t{4} << 20, size_t{256} << 20}) {
    size_t n = bytes / sizeof(float);
    std::vector<float> dst(n, 1.0f), src(n, 0.0f);
    double ours = gbps(bytes, [&] {
      cohort::ops::reduce_into(dst.data(), src.data(), n, cohort::DataType::kFloat32,
                               cohort::ReduceOp::kSum);
    });
    double plain = gbps(bytes, [&] { plain_sum(dst.data(), src.data(), n); });
    double copy = gbps(bytes, [&] { std::memcpy(dst.data(), src.data(), bytes); });
    std::printf("%10zu %9.1f GB/s %9.1f GB/s %9.1f GB/s\n", bytes, ours, plain, copy);
  }
  return 0;
}
