// Compares Gloo's allreduce algorithms on this machine, to choose GlooBackend's algorithm per size.
// Forks `--ranks` processes (default 2) that rendezvous through a FileStore in a fresh temporary
// directory; rank 0 prints the mean time per float32 sum allreduce and the algorithm bandwidth.
//   build/bin/gloo_allreduce_bench [ranks]
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fork_ranks.h"

namespace {

using Clock = std::chrono::steady_clock;

// Mean seconds per call of `op` over a batch of about 0.3 s (at least 3 calls) after one warm-up;
// the batch length is decided by rank 0 and broadcast implicitly by running a fixed count.
double time_op(gloo::Context& context, const std::function<void()>& op, size_t bytes) {
  op();
  int iterations =
      std::max<int>(3, static_cast<int>(0.3 / (static_cast<double>(bytes) / 1.2e9 + 200e-6)));
  gloo::BarrierOptions barrier(std::shared_ptr<gloo::Context>(&context, [](gloo::Context*) {}));
  barrier.setTag(1);
  gloo::barrier(barrier);
  auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) op();
  return std::chrono::duration<double>(Clock::now() - start).count() / iterations;
}

void run_rank(int rank, int size, const std::string& dir) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  gloo::rendezvous::FileStore store(dir);
  context->connectFullMesh(store, device);
  uint32_t tag = 100;
  if (rank == 0)
    std::printf("%10s %14s %14s %14s   (us per op, GB/s algbw)\n", "bytes", "halving-doubl",
                "ring-chunked", "new-API ring");
  for (size_t bytes = 4096; bytes <= (size_t{256} << 20); bytes *= 4) {
    size_t count = bytes / sizeof(float);
    std::vector<float> data(count, 1.0f);
    std::vector<float*> ptrs{data.data()};
    gloo::AllreduceHalvingDoubling<float> hd(context, ptrs, static_cast<int>(count));
    gloo::AllreduceRingChunked<float> rc(context, ptrs, static_cast<int>(count));
    double t_hd = time_op(
        *context, [&] { hd.run(); }, bytes);
    double t_rc = time_op(
        *context, [&] { rc.run(); }, bytes);
    double t_ring = time_op(
        *context,
        [&] {
          gloo::AllreduceOptions opts(context);
          opts.setOutput(data.data(), count);
          opts.setReduceFunction(
              static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
          opts.setTag(tag++);
          gloo::allreduce(opts);
        },
        bytes);
    if (rank == 0) {
      auto cell = [&](double t) {
        static char text[64];
        std::snprintf(text, sizeof text, "%8.0f %5.2f", t * 1e6,
                      static_cast<double>(bytes) / t / 1e9);
        return std::string(text);
      };
      std::printf("%10zu %14s %14s %14s\n", bytes, cell(t_hd).c_str(), cell(t_rc).c_str(),
                  cell(t_ring).c_str());
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int size = argc > 1 ? std::atoi(argv[1]) : 2;
  char dir[] = "/tmp/gloo_bench_XXXXXX";
  if (mkdtemp(dir) == nullptr) return 1;
  return cohort::bench::run_forked_ranks(
      size, [&](int rank) { run_rank(rank, size, dir); }, dir);
}
