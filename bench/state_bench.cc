// State benchmarks:
//  1. commit() of float32 buffers (default 256 MiB in 4 buffers: weights and optimizer moments)
//     against one plain memcpy of the same number of bytes, in the same run;
//  2. the elastic sampler's merge at commit (default 10,000,000 samples): a commit after a few
//     training steps, and after each rank processed its whole share; plus the processed set's
//     measured memory;
//  3. commit() of sharded float32 buffers (default 256 MiB in 4 buffers over the world: each rank
//     holds 1/N and sends its range to COHORT_STATE_REPLICAS holders) against a memcpy of the
//     rank's own range, with the bytes each rank sends and keeps: the commit on the step's
//     critical path, and when its replicas arrived after it returned.
//   state_bench                     cohortrun -np 2 ./state_bench
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "cohort/cohort.h"
#include "cohort/elastic/sharded.h"
#include "cohort/elastic/state.h"

namespace {

using namespace cohort;
using namespace cohort::bench;
using cohort::elastic::ElasticSampler;
using cohort::elastic::State;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Resident memory of this process in bytes.
size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t total = 0, resident = 0;
  statm >> total >> resident;
  return resident * 4096;
}

// Medians over `trials` interleaved trials of a memcpy of `bytes` and of state.commit(), each
// timed on the slowest rank.
std::pair<double, double> commit_against_memcpy(State& state, size_t bytes, int trials) {
  std::vector<std::byte> src(bytes, std::byte{1}), dst(bytes, std::byte{0});
  auto copy = [&] { std::memcpy(dst.data(), src.data(), bytes); };
  auto commit = [&] { state.commit(); };
  std::vector<double> t_copy, t_commit;
  for (int t = 0; t < trials; ++t) {
    t_copy.push_back(time_per_op(copy, start_together, slowest, 0.3, 3));
    t_commit.push_back(time_per_op(commit, start_together, slowest, 0.3, 3));
  }
  return {median(t_copy), median(t_commit)};
}

void bench_commit(size_t mib, size_t buffers, int trials) {
  size_t bytes = mib << 20, floats = bytes / sizeof(float) / buffers;
  std::vector<std::vector<float>> values(buffers, std::vector<float>(floats, 1.0f));
  State state("bench");
  for (size_t i = 0; i < buffers; ++i) state.track("buffer" + std::to_string(i), values[i]);
  state.commit();  // first touch is done at track(); this warms the path
  auto [c, s] = commit_against_memcpy(state, bytes, trials);
  if (cohort::rank() != 0) return;
  std::printf("commit of %zu MiB float32 in %zu buffers, %d ranks, median of %d trials:\n", mib,
              buffers, cohort::size(), trials);
  std::printf("  memcpy %zu MiB:  %8.2f ms  %6.2f GB/s\n", mib, c * 1e3,
              algbw_gbps(double(bytes), c));
  std::printf("  commit():        %8.2f ms  %6.2f GB/s   commit / memcpy = %.3f (target <= 1.5)\n",
              s * 1e3, algbw_gbps(double(bytes), s), s / c);
}

// One commit timed on every rank, the slowest rank's seconds; and how long after it returned the
// barrier that follows it completed (the runtime runs collectives in order, so that barrier
// waits for the commit's replicas: the tail of their transfer).
std::pair<double, double> timed_commit(State& state) {
  start_together();
  double t0 = now();
  state.commit();
  double t1 = now();
  start_together();
  double t2 = now();
  return {slowest(t1 - t0), slowest(t2 - t1)};
}

void bench_sharded_commit(size_t mib, size_t buffers, int trials) {
  uint64_t floats = (uint64_t{mib} << 20) / sizeof(float) / buffers;
  std::vector<std::unique_ptr<cohort::elastic::ShardedBuffer<float>>> values;
  State state("sharded");
  for (size_t i = 0; i < buffers; ++i) {
    values.push_back(std::make_unique<cohort::elastic::ShardedBuffer<float>>(floats, 1.0f));
    state.track("moments" + std::to_string(i), *values.back());
  }
  state.sync();  // the first copies and replicas
  size_t own = 0;
  for (const auto& v : values) own += v->bytes().size();
  std::vector<std::byte> src(own, std::byte{1}), dst(own, std::byte{0});
  auto copy = [&] { std::memcpy(dst.data(), src.data(), own); };
  state.commit();  // the first own copies and replicas of this loop
  std::vector<double> t_copy, t_commit, t_tail;
  for (int t = 0; t < trials; ++t) {
    t_copy.push_back(time_per_op(copy, start_together, slowest, 0.3, 3));
    auto [commit, tail] = timed_commit(state);
    t_commit.push_back(commit);
    t_tail.push_back(tail);
  }
  double c = median(t_copy), s = median(t_commit), tail = median(t_tail);
  if (cohort::rank() != 0) return;
  const char* env = std::getenv("COHORT_STATE_REPLICAS");
  const char* off = std::getenv("COHORT_STATE_OVERLAP_DISABLE");
  int replicas = env ? std::atoi(env) : 1;
  bool overlap = !(off && std::string(off) == "1");
  std::printf(
      "sharded commit of %zu MiB float32 in %zu buffers over %d ranks, %d replica(s), replicas "
      "%s, median of %d trials:\n",
      mib, buffers, cohort::size(), replicas,
      overlap ? "sent during the next step" : "waited for (COHORT_STATE_OVERLAP_DISABLE=1)",
      trials);
  double mib_own = double(own) / (1 << 20);
  std::printf(
      "  rank 0 holds %.1f MiB live + %.1f MiB own copies + %.1f MiB of replicas "
      "(replicated state: %zu MiB on every rank)\n",
      mib_own, mib_own * (overlap ? 2 : 1), mib_own * replicas * (overlap ? 2 : 1), mib);
  std::printf("  memcpy of its range (%.1f MiB): %8.2f ms\n", mib_own, c * 1e3);
  std::printf(
      "  commit() on the step's critical path: %8.2f ms   commit / memcpy = %.2f "
      "(target <= 1.5)\n",
      s * 1e3, s / c);
  std::printf(
      "  replicas of %.1f MiB arrived %.2f ms after commit() returned (the next step's "
      "collectives run after them)\n",
      mib_own * replicas, tail * 1e3);
}

// Times one commit of the sampler after each rank recorded `per_rank` samples; the slowest rank.
// Adds this rank's time to produce and record the batch to `*recording`.
double timed_merge(State& state, ElasticSampler& sampler, uint64_t per_rank, double* recording) {
  double r0 = now();
  auto range = sampler.batches(per_rank);
  sampler.record(*range.begin());
  *recording += now() - r0;
  start_together();
  double t0 = now();
  state.commit();
  return slowest(now() - t0);
}

void bench_merge(uint64_t samples, uint64_t per_commit, int commits, int trials) {
  // The resident growth of building a sampler, least of 3 built side by side (other threads
  // allocate too; freeing one would let the allocator reuse resident memory for the next).
  size_t set_bytes = SIZE_MAX;
  std::vector<std::unique_ptr<ElasticSampler>> built;
  for (int i = 0; i < 3; ++i) {
    size_t before = resident_bytes();
    built.push_back(std::make_unique<ElasticSampler>(samples, 42));
    set_bytes = std::min(set_bytes, resident_bytes() - before);
  }
  std::unique_ptr<ElasticSampler> sampler = std::move(built.back());
  built.clear();
  State state("merge");
  state.track("sampler", *sampler);
  state.sync();
  std::vector<double> small;
  double unused = 0, recording = 0;
  uint64_t recorded = 0;
  for (int i = 0; i < commits; ++i) {
    small.push_back(timed_merge(state, *sampler, per_commit, &unused));
  }
  std::vector<double> whole;
  for (int t = 0; t < trials; ++t) {
    sampler->set_epoch(static_cast<uint64_t>(t) + 1);
    uint64_t share = sampler->remaining();  // every rank's whole share, in one commit
    recorded += share;
    whole.push_back(timed_merge(state, *sampler, share, &recording));
    if (sampler->unprocessed() != 0) std::fprintf(stderr, "merge: the epoch is not complete!\n");
  }
  if (cohort::rank() != 0) return;
  std::printf("elastic sampler, %llu samples, %d ranks:\n",
              static_cast<unsigned long long>(samples), cohort::size());
  std::printf("  processed set: %zu bytes resident = %.3f bits per sample (target <= 1)\n",
              set_bytes, 8.0 * double(set_bytes) / double(samples));
  std::printf(
      "  commit merge after %llu samples per rank: median %.3f ms, max %.3f ms over %d "
      "commits (target <= 10 ms)\n",
      static_cast<unsigned long long>(per_commit), median(small) * 1e3,
      *std::max_element(small.begin(), small.end()) * 1e3, commits);
  std::printf(
      "  commit merge after each rank's whole share (%llu samples): median %.3f ms, max "
      "%.3f ms over %d epochs\n",
      static_cast<unsigned long long>(samples / static_cast<uint64_t>(cohort::size())),
      median(whole) * 1e3, *std::max_element(whole.begin(), whole.end()) * 1e3, trials);
  std::printf("  batches() + record() on rank 0: %.1f ns per sample\n",
              recording / static_cast<double>(recorded) * 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 256, buffers = 4, sharded_mib = 256;
  uint64_t samples = 10'000'000, per_commit = 2048;
  int trials = 7, commits = 50;
  CLI::App app("Cohort state benchmark");
  app.add_option("--mib", mib, "MiB of float32 buffers to commit")->capture_default_str();
  app.add_option("--buffers", buffers, "buffers they are split into")->capture_default_str();
  app.add_option("--samples", samples, "dataset size for the sampler merge")->capture_default_str();
  app.add_option("--per-commit", per_commit, "samples each rank records between commits")
      ->capture_default_str();
  app.add_option("--commits", commits, "timed commits of the sampler")->capture_default_str();
  app.add_option("--sharded-mib", sharded_mib, "MiB of sharded float32 buffers (0: skip)")
      ->capture_default_str();
  app.add_option("--trials", trials, "interleaved trials")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  cohort::init();
  // The merge first: its memory figure needs a heap that large buffers have not grown yet.
  bench_merge(samples, per_commit, commits, trials);
  bench_commit(mib, buffers, trials);
  if (sharded_mib > 0) bench_sharded_commit(sharded_mib, buffers, trials);
  cohort::shutdown();
}
