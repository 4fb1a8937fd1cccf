// One-rank NCCL allreduce latency, float32 sum, 8 B to --max-bytes, at two levels: the ops level
// (the NCCL backend over a world of one: NCCL's launch plus Cohort's bounded wait) and through the
// engine (plus negotiation, queueing and the background thread). A world of one moves no data
// between GPUs, so these times are the framework's overhead, not a network's; busbw is 0 by
// nccl-tests' definition (2 (n - 1) / n).
//   nccl_latency_bench [--quick] [--max-bytes N]      (alone: a world of one)
//   nccl_latency_bench --probe                        exit 77 with a reason when no GPU is usable
// Prints the markdown rows (no header) on stdout.
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cohort/cohort.h"
#include "gpu_bench_util.h"
#include "ops/lone_backend.h"
#include "ops/nccl_backend.h"

namespace {

using namespace cohort;
using namespace cohort::bench;

constexpr const char* kProgram = "nccl_latency_bench";

void cuda_ok(cudaError_t rc, const char* call) {
  bench::cuda_ok(kProgram, rc, call);
}

// Seconds per allreduce of `bytes` on device memory through `run`, alone (no peers to agree with).
double time_device(size_t bytes, double seconds, const std::function<void(void*, size_t)>& run) {
  void* memory = nullptr;
  cuda_ok(cudaMalloc(&memory, bytes), "cudaMalloc");
  cuda_ok(cudaMemset(memory, 0, bytes), "cudaMemset");
  run(memory, bytes / 4);  // warm-up: the first call builds what the later ones reuse
  double t =
      time_per_op([&] { run(memory, bytes / 4); }, [] {}, [](double s) { return s; }, seconds, 1);
  cudaFree(memory);
  return t;
}

std::map<size_t, double> ops_level(const std::vector<size_t>& all, double seconds) {
  ops::LoneBackend lone;
  auto nccl = ops::make_nccl_backend(lone, 0);
  std::map<size_t, double> times;
  for (size_t bytes : all) {
    times[bytes] = time_device(bytes, seconds, [&](void* data, size_t count) {
      nccl->allreduce(data, count, DataType::kFloat32, ReduceOp::kSum, {"bench", false});
    });
  }
  return times;
}

std::map<size_t, double> engine_level(const std::vector<size_t>& all, double seconds) {
  std::map<size_t, double> times;
  for (size_t bytes : all) {
    std::string name = "latency." + std::to_string(bytes);
    times[bytes] = time_device(bytes, seconds, [&](void* data, size_t count) {
      allreduce(name, Tensor{data, DataType::kFloat32, {static_cast<int64_t>(count)}, 0});
    });
  }
  return times;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"one-rank NCCL allreduce latency, ops level and through the engine"};
  bool quick = false, probe = false;
  size_t max_bytes = 64u << 20;
  app.add_flag("--quick", quick, "three sizes, short batches (a rehearsal)");
  app.add_flag("--probe", probe, "exit 77 with a reason when no CUDA device is usable");
  app.add_option("--max-bytes", max_bytes, "the largest message");
  CLI11_PARSE(app, argc, argv);
  if (no_usable_gpu(kProgram)) return 77;
  if (probe) return 0;
  cuda_ok(cudaSetDevice(0), "cudaSetDevice");
  std::vector<size_t> all = gpu_bench_sizes(quick, max_bytes);
  double seconds = quick ? 0.05 : 0.3;
  std::map<size_t, double> ops_times = ops_level(all, seconds);  // its communicator is gone now
  init();
  std::map<size_t, double> engine_times = engine_level(all, seconds);
  shutdown();
  for (size_t bytes : all) {
    double o = ops_times[bytes], e = engine_times[bytes];
    std::printf("| 1 | %s | %.1f | %.1f | %.1f | %.3f | 0 |\n", human_bytes(bytes).c_str(), o * 1e6,
                e * 1e6, (e - o) * 1e6, algbw_gbps(static_cast<double>(bytes), e));
  }
  return 0;
}
