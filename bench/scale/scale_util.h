// Helpers shared by the simulation benches of bench/scale/: CPU and wall clocks, the list of
// simulated sizes, and the log-log fit of a cost against the number of ranks.
#pragma once

#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace cohort::bench::scale {

// CPU seconds this thread (or, with `process`, this process) has used.
inline double cpu_seconds(bool process = false) {
  timespec ts{};
  clock_gettime(process ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Powers of two from `from` to `to`, both included.
inline std::vector<int> powers_of_two(int from, int to) {
  std::vector<int> out;
  for (int n = from; n <= to; n *= 2) out.push_back(n);
  return out;
}

// The least-squares slope of log(y) against log(x) over the points with x >= min_x and y > 0:
// 1 means linear growth, 0 constant. NaN with fewer than two such points.
inline double loglog_slope(const std::vector<double>& x, const std::vector<double>& y,
                           double min_x = 0) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int n = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (x[i] < min_x || x[i] <= 0 || y[i] <= 0) continue;
    double lx = std::log(x[i]), ly = std::log(y[i]);
    sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly, ++n;
  }
  double d = n * sxx - sx * sx;
  return n < 2 || d == 0 ? std::nan("") : (n * sxy - sx * sy) / d;
}

}  // namespace cohort::bench::scale
