// Compares the two ways GlooBackend can reduce-scatter, to choose between them by size: the ring
// (ops/gloo_reduce_scatter.cc) against an allreduce of the whole input (the cached halving-doubling
// that GlooBackend picks) followed by a copy of the own block. Forks `ranks` processes (default 2)
// that rendezvous through a FileStore; rank 0 prints the median over interleaved trials of the
// mean time per float32 sum reduce-scatter with equal blocks.
//   build/bin/gloo_reduce_scatter_bench [ranks] [trials]
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fork_ranks.h"
#include "ops/gloo_backend.h"
#include "ops/gloo_reduce_scatter.h"

namespace {

using Clock = std::chrono::steady_clock;

// Mean seconds per call over a batch of about 0.2 s (the count depends only on `bytes`, so every
// rank runs the same number), started together after one warm-up call.
double time_op(const std::shared_ptr<gloo::Context>& context, uint32_t& tag,
               const std::function<void()>& op, size_t bytes) {
  op();
  int iterations =
      std::max<int>(3, static_cast<int>(0.2 / (static_cast<double>(bytes) / 1.0e9 + 300e-6)));
  gloo::BarrierOptions barrier(context);
  barrier.setTag(tag++);
  gloo::barrier(barrier);
  auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) op();
  return std::chrono::duration<double>(Clock::now() - start).count() / iterations;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

void run_rank(int rank, int size, int trials, const std::string& dir) {
  using namespace cohort;
  gloo::rendezvous::FileStore store(dir);
  auto backend = ops::make_gloo_backend({.rank = rank, .size = size, .prefix = "backend"}, store);
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  gloo::rendezvous::PrefixStore prefixed("ring", store);
  context->connectFullMesh(prefixed, device);
  uint32_t tag = 1;
  if (rank == 0)
    std::printf("%10s %12s %12s   (us per op, median of %d)\n", "bytes", "allreduce", "ring",
                trials);
  for (size_t bytes = 4096; bytes <= (size_t{64} << 20); bytes *= 4) {
    size_t total = bytes / sizeof(float);
    std::vector<size_t> counts(size, total / size);
    counts[0] += total % size;
    std::vector<float> input(total, 1.0f), output(counts[rank]), scratch(total);
    std::vector<std::byte> ring_scratch;
    size_t offset = 0;
    for (int r = 0; r < rank; ++r) offset += counts[r];
    auto by_allreduce = [&] {
      std::memcpy(scratch.data(), input.data(), bytes);
      backend->allreduce(scratch.data(), total, DataType::kFloat32, ReduceOp::kSum,
                         {"rs." + std::to_string(bytes), false});
      std::memcpy(output.data(), scratch.data() + offset, counts[rank] * sizeof(float));
    };
    ops::GlooWaitBreaker breaker;  // never aborted here
    auto by_ring = [&] {
      ops::GlooWaitBreaker::InFlight in_flight(breaker);
      ops::run_gloo_ring_reduce_scatter(context, input.data(), output.data(), counts,
                                        DataType::kFloat32, ReduceOp::kSum, tag++, ring_scratch,
                                        in_flight);
    };
    std::vector<double> allreduce_times, ring_times;
    for (int t = 0; t < trials; ++t) {
      allreduce_times.push_back(time_op(context, tag, by_allreduce, bytes));
      ring_times.push_back(time_op(context, tag, by_ring, bytes));
    }
    if (rank == 0) {
      std::printf("%10zu %12.0f %12.0f\n", bytes, median(allreduce_times) * 1e6,
                  median(ring_times) * 1e6);
      std::fflush(stdout);
    }
  }
  backend->barrier();
}

}  // namespace

int main(int argc, char** argv) {
  int size = argc > 1 ? std::atoi(argv[1]) : 2;
  int trials = argc > 2 ? std::atoi(argv[2]) : 5;
  char dir[] = "/tmp/gloo_rs_bench_XXXXXX";
  if (mkdtemp(dir) == nullptr) return 1;
  return cohort::bench::run_forked_ranks(
      size, [&](int rank) { run_rank(rank, size, trials, dir); }, dir);
}
