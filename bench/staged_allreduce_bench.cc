// Device allreduce through the staged backend (ranks sharing one GPU) against the bound no
// staged allreduce can beat: the pinned round trip of the same bytes (cudaMemcpyAsync
// device-to-host, then host-to-device, every rank at once as staging does) plus the host
// allreduce of those bytes through the same engine. float32 sum, 8 B to --max-bytes; times are
// the slowest rank's mean per operation; algbw and busbw as nccl-tests defines them.
//   COHORT_DEVICE_OPERATIONS=staged cohortrun -np 2 staged_allreduce_bench --table FILE
//   staged_allreduce_bench --probe     exit 77 with a reason when no GPU is usable
// Rank 0 writes the markdown rows (no header) to FILE, or stdout without --table.
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cohort/cohort.h"
#include "gpu_bench_util.h"

namespace {

using namespace cohort;
using namespace cohort::bench;

constexpr const char* kProgram = "staged_allreduce_bench";

void cuda_ok(cudaError_t rc, const char* call) {
  bench::cuda_ok(kProgram, rc, call);
}

struct Buffers {
  explicit Buffers(size_t bytes) : host(bytes / 4, 1.0f) {
    cuda_ok(cudaMalloc(&device, bytes), "cudaMalloc");
    cuda_ok(cudaMemcpy(device, host.data(), bytes, cudaMemcpyHostToDevice), "H2D");
    cuda_ok(cudaMallocHost(&pinned, bytes), "cudaMallocHost");
    cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate");
  }
  ~Buffers() {
    cudaStreamDestroy(stream);
    cudaFreeHost(pinned);
    cudaFree(device);
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;

  std::vector<float> host;
  void* device = nullptr;
  void* pinned = nullptr;
  cudaStream_t stream = nullptr;
};

struct Timing {
  double staged, copies, host;
};

Timing measure(size_t bytes, double seconds) {
  Buffers b(bytes);
  Shape shape = {static_cast<int64_t>(bytes / 4)};
  Tensor on_device{b.device, DataType::kFloat32, shape, 0};  // the ranks share GPU 0
  Tensor on_host{b.host.data(), DataType::kFloat32, shape};
  std::string tag = std::to_string(bytes);
  auto staged = [&] { allreduce("staged." + tag, on_device); };
  auto host = [&] { allreduce("host." + tag, on_host); };
  auto copies = [&] {
    cuda_ok(cudaMemcpyAsync(b.pinned, b.device, bytes, cudaMemcpyDeviceToHost, b.stream), "D2H");
    cuda_ok(cudaMemcpyAsync(b.device, b.pinned, bytes, cudaMemcpyHostToDevice, b.stream), "H2D");
    cuda_ok(cudaStreamSynchronize(b.stream), "cudaStreamSynchronize");
  };
  staged();  // the first use builds the device backend and its staging buffers
  Timing t{};
  t.staged = time_per_op(staged, start_together, slowest, seconds, 1);
  t.copies = time_per_op(copies, start_together, slowest, seconds, 1);
  t.host = time_per_op(host, start_together, slowest, seconds, 1);
  return t;
}

std::string row(size_t bytes, const Timing& t) {
  double bound = t.copies + t.host;
  char line[512];
  std::snprintf(line, sizeof line, "| %d | %s | %.1f | %.3f | %.3f | %.1f | %.1f | %.1f | %.2f |\n",
                size(), human_bytes(bytes).c_str(), t.staged * 1e6, algbw_gbps(bytes, t.staged),
                allreduce_busbw_gbps(bytes, t.staged, size()), t.copies * 1e6, t.host * 1e6,
                bound * 1e6, t.staged / bound);
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"staged device allreduce against the memcpy + host allreduce bound"};
  bool quick = false, probe = false;
  size_t max_bytes = 256u << 20;
  std::string table;
  app.add_flag("--quick", quick, "three sizes, short batches (a rehearsal)");
  app.add_flag("--probe", probe, "exit 77 with a reason when no CUDA device is usable");
  app.add_option("--max-bytes", max_bytes, "the largest message");
  app.add_option("--table", table, "where rank 0 writes the markdown rows");
  CLI11_PARSE(app, argc, argv);
  if (no_usable_gpu(kProgram)) return 77;
  if (probe) return 0;
  init();
  cuda_ok(cudaSetDevice(0), "cudaSetDevice");
  std::string rows;
  for (size_t bytes : gpu_bench_sizes(quick, max_bytes))
    rows += row(bytes, measure(bytes, quick ? 0.05 : 0.2));
  if (rank() == 0) {
    FILE* out = table.empty() ? stdout : std::fopen(table.c_str(), "a");
    if (out == nullptr) return 1;
    std::fputs(rows.c_str(), out);
    if (out != stdout) std::fclose(out);
  }
  shutdown();
  return 0;
}
