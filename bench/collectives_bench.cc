// Broadcast, allgather and reducescatter through Cohort, 8 B to --max-bytes: the slowest rank's
// time per operation, algbw and busbw as nccl-tests defines them (broadcast: busbw = algbw;
// allgather: the size is the whole output; reducescatter: the size is the whole input; for both,
// busbw = algbw * (n - 1) / n). Run twice to compare two settings, e.g. COHORT_HIERARCHICAL=1 and
// 0 (docs/benchmarks.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <vector>

#include "bench_util.h"
#include "cohort/cohort.h"

using namespace cohort;
using namespace cohort::bench;

namespace {

struct Options {
  size_t max_bytes = size_t{8} << 20;
  size_t step = 4;
  int trials = 3;
  double batch_seconds = 0.1;
};

// Median over the trials of the slowest rank's seconds per `op`.
double measure(const Options& o, const std::function<void()>& op) {
  std::vector<double> times;
  for (int trial = 0; trial < o.trials; ++trial) {
    times.push_back(time_per_op(op, start_together, slowest, o.batch_seconds, 5));
  }
  return median(times);
}

void print_row(size_t bytes, double broadcast_s, double allgather_s, double reducescatter_s) {
  int n = cohort::size();
  size_t gathered = bytes * n;
  double share = (n - 1.0) / n;
  std::printf("%10s %13.1f %9.3f %13s %13.1f %9.3f %17.1f %9.3f\n", human_bytes(bytes).c_str(),
              broadcast_s * 1e6, algbw_gbps(bytes, broadcast_s), human_bytes(gathered).c_str(),
              allgather_s * 1e6, algbw_gbps(gathered, allgather_s) * share, reducescatter_s * 1e6,
              algbw_gbps(bytes, reducescatter_s) * share);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("Cohort broadcast, allgather and reducescatter benchmark");
  app.add_option("--max-bytes", o.max_bytes, "largest message (per rank, for allgather)")
      ->capture_default_str();
  app.add_option("--step", o.step, "factor between consecutive sizes")
      ->capture_default_str()
      ->check(CLI::Range(2, 1024));
  app.add_option("--trials", o.trials, "trials per size")->capture_default_str();
  app.add_option("--batch-seconds", o.batch_seconds, "minimum duration of a timed batch")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  cohort::init();
  if (cohort::rank() == 0) {
    std::printf(
        "# Cohort broadcast (root 0), allgather (size bytes per rank) and reducescatter "
        "(size bytes, float32 sum) on %s, %d ranks; slowest rank's mean per op, medians "
        "of %d trials. GB/s = 1e9 B/s.\n",
        std::string(backend_name()).c_str(), cohort::size(), o.trials);
    std::printf("%10s %13s %9s %13s %13s %9s %17s %9s\n", "size", "broadcast_us", "busbw",
                "gathered", "allgather_us", "busbw", "reducescatter_us", "busbw");
  }
  for (size_t bytes = 8; bytes <= o.max_bytes; bytes *= o.step) {
    std::vector<uint8_t> buffer(bytes, 1);
    double b = measure(o, [&] { cohort::broadcast("bench.broadcast", Tensor::of(buffer), 0); });
    double g = measure(o, [&] { cohort::allgather("bench.allgather", Tensor::of(buffer)); });
    std::vector<float> values(bytes / sizeof(float), 1.0f);
    double r =
        measure(o, [&] { cohort::reducescatter("bench.reducescatter", Tensor::of(values)); });
    if (cohort::rank() == 0) print_row(bytes, b, g, r);
  }
  cohort::shutdown();
}
