// Timing helpers shared by the benchmarks: batches of operations timed as a whole, medians over
// interleaved trials, and algbw/busbw as nccl-tests defines them.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "cohort/cohort.h"

namespace cohort::bench {

// The slowest rank's time: what a collective benchmark reports.
inline double slowest(double seconds) {
  cohort::allreduce("bench.agree", Tensor::of(std::span<double>(&seconds, 1)),
                    Tensor::of(std::span<double>(&seconds, 1)), {ReduceOp::kMax});
  return seconds;
}

// Starts every rank's timed batch together.
inline void start_together() {
  cohort::barrier("bench.sync");
}

// Seconds per operation: runs `op` in batches until a batch lasts at least `min_seconds`
// (at least `min_ops` operations), and returns the mean of that batch. `sync` is called before
// the batch so every rank starts together; `agree` turns this rank's time into the slowest rank's.
inline double time_per_op(const std::function<void()>& op, const std::function<void()>& sync,
                          const std::function<double(double)>& agree, double min_seconds,
                          int min_ops) {
  int ops = min_ops;
  for (;;) {
    sync();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < ops; ++i) op();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds = agree(seconds);  // every rank takes the same decision below
    if (seconds >= min_seconds || ops >= (1 << 20)) return seconds / ops;
    ops = std::max(ops * 2, static_cast<int>(ops * min_seconds / std::max(seconds, 1e-9)) + 1);
  }
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// nccl-tests: algbw = bytes / time; busbw = algbw * 2 (n - 1) / n for allreduce.
inline double algbw_gbps(double bytes, double seconds) {
  return bytes / seconds / 1e9;
}
inline double allreduce_busbw_gbps(double bytes, double seconds, int n) {
  return algbw_gbps(bytes, seconds) * 2.0 * (n - 1) / n;
}

inline std::string human_bytes(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, v == static_cast<int>(v) ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

}  // namespace cohort::bench
