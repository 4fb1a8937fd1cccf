// The shared-memory data plane alone (ops/shm_group.h, ops/shm_collectives.h), without the
// runtime's negotiation: forked ranks on one segment run the float32 sum allreduce from 8 B to
// 256 MiB, beside a one-core memcpy of the same size as the memory-bandwidth reference. Rank 0
// prints the mean time per operation and the busbw (nccl-tests: algbw x 2(n-1)/n).
//   build/bin/shm_allreduce_bench [--ranks N] [--slot-bytes B] [--max-bytes B]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "fork_ranks.h"
#include "ops/shm_collectives.h"
#include "ops/shm_group.h"

namespace {

using namespace cohort;
using namespace cohort::ops;
using Clock = std::chrono::steady_clock;

struct Options {
  int ranks = 2;
  size_t slot_bytes = size_t{1} << 20;
  size_t max_bytes = size_t{256} << 20;
  double batch_seconds = 0.2;
};

std::unique_ptr<ShmGroup> join(const ShmRendezvous& meet, int rank, const Options& o) {
  auto deadline = SteadyClock::now() + std::chrono::seconds(30);
  size_t bytes = ShmGroup::segment_bytes(o.ranks, o.slot_bytes);
  ShmSegment segment = rank == 0 ? ShmSegment::create(meet, o.ranks, bytes, deadline, nullptr)
                                 : ShmSegment::open(meet, rank, deadline, nullptr);
  std::vector<int> names(o.ranks);
  for (int r = 0; r < o.ranks; ++r) names[r] = r;
  return std::make_unique<ShmGroup>(std::move(segment), rank, names, o.slot_bytes,
                                    std::chrono::seconds(60));
}

// Mean seconds per call over a batch whose length rank 0 picks from a first timing and all ranks
// agree on through a one-element reduction, so that every rank makes the same number of calls.
template <typename Op>
double time_per_op(ShmGroup& group, double batch_seconds, Op op) {
  op();
  auto start = Clock::now();
  op();
  double one = std::chrono::duration<double>(Clock::now() - start).count();
  double calls = std::max(3.0, batch_seconds / std::max(one, 1e-7));
  shm::reduce(group, "bench", &calls, 1, DataType::kFloat64, ReduceOp::kMax,
              [&](size_t, size_t, const std::byte* v) { std::memcpy(&calls, v, sizeof calls); });
  int n = static_cast<int>(calls);
  group.barrier("bench");
  start = Clock::now();
  for (int i = 0; i < n; ++i) op();
  group.barrier("bench");
  return std::chrono::duration<double>(Clock::now() - start).count() / n;
}

void run_rank(const ShmRendezvous& meet, int rank, const Options& o) {
  auto group = join(meet, rank, o);
  if (rank == 0) {
    std::printf("# shared-memory allreduce, float32 sum, %d ranks, slot %zu KiB, no negotiation\n",
                o.ranks, o.slot_bytes >> 10);
    std::printf("%10s %10s %8s %8s %12s\n", "size", "time_us", "algbw", "busbw", "memcpy_GB/s");
  }
  double factor = 2.0 * (o.ranks - 1) / o.ranks;
  for (size_t bytes = 8; bytes <= o.max_bytes; bytes *= 2) {
    size_t count = bytes / sizeof(float);
    std::vector<float> data(count, 1.0f), copy(count);
    double t = time_per_op(*group, o.batch_seconds, [&] {
      shm::allreduce(*group, data.data(), count, DataType::kFloat32, ReduceOp::kSum);
    });
    double m = time_per_op(*group, o.batch_seconds / 4,
                           [&] { std::memcpy(copy.data(), data.data(), bytes); });
    if (rank == 0) {
      std::printf("%10zu %10.2f %8.3f %8.3f %12.2f\n", bytes, t * 1e6, bytes / t / 1e9,
                  bytes / t / 1e9 * factor, bytes / m / 1e9);
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("shared-memory allreduce benchmark");
  app.add_option("--ranks", o.ranks, "forked ranks")->capture_default_str();
  app.add_option("--slot-bytes", o.slot_bytes, "bytes per member per step")->capture_default_str();
  app.add_option("--max-bytes", o.max_bytes, "largest message")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  ShmRendezvous meet = ShmRendezvous::random();
  return cohort::bench::run_forked_ranks(
      o.ranks, [&](int rank) { run_rank(meet, rank, o); }, "/nonexistent-nothing-to-remove");
}
