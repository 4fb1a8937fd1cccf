// Fusion under real collectives: every rank submits hundreds of asynchronous allreduces of
// several kinds (float32 sum, float32 average with a postscale, int32 max, float64 sum), in a
// rank-dependent order and from fresh buffers each round, and checks every result. Run with
// different COHORT_FUSION_THRESHOLD values so groups split at different places.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <vector>

#include "cohort/cohort.h"

using namespace cohort;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::cerr << "fusion_check FAILED on rank " << cohort::rank() << ": " << what << std::endl;
  std::exit(1);
}

struct Job {
  std::string name;
  int kind;  // 0 float sum, 1 float average * 2, 2 int max, 3 double sum
  size_t count;
  std::vector<float> f;
  std::vector<int32_t> i;
  std::vector<double> d;
};

Handle submit(Job& j, int rank) {
  for (size_t k = 0; k < j.count; ++k) {
    if (j.kind == 2)
      j.i[k] = static_cast<int32_t>((rank * 7 + k) % 13);
    else if (j.kind == 3)
      j.d[k] = rank + 0.25 * static_cast<double>(k % 5);
    else
      j.f[k] = static_cast<float>(rank + 1);
  }
  switch (j.kind) {
    case 0:
      return allreduce_async(j.name, Tensor::of(j.f));
    case 1:
      return allreduce_async(j.name, Tensor::of(j.f), {ReduceOp::kAverage, 1.0, 2.0});
    case 2:
      return allreduce_async(j.name, Tensor::of(j.i), {ReduceOp::kMax});
    default:
      return allreduce_async(j.name, Tensor::of(j.d));
  }
}

void check(const Job& j, int size) {
  double sum_ranks = size * (size + 1) / 2.0;
  for (size_t k = 0; k < j.count; ++k) {
    bool ok = true;
    if (j.kind == 0) ok = j.f[k] == static_cast<float>(sum_ranks);
    if (j.kind == 1) ok = std::fabs(j.f[k] - 2 * sum_ranks / size) < 1e-5;
    if (j.kind == 2) {
      int32_t want = 0;
      for (int r = 0; r < size; ++r) want = std::max(want, static_cast<int32_t>((r * 7 + k) % 13));
      ok = j.i[k] == want;
    }
    if (j.kind == 3)
      ok = j.d[k] == size * (size - 1) / 2.0 + size * 0.25 * static_cast<double>(k % 5);
    if (!ok) fail(j.name + " element " + std::to_string(k));
  }
}

}  // namespace

int main() {
  cohort::init();
  int rank = cohort::rank(), size = cohort::size();
  for (int round = 0; round < 5; ++round) {
    std::vector<std::unique_ptr<Job>> jobs;
    for (int t = 0; t < 300; ++t) {
      auto j = std::make_unique<Job>();
      j->name = "layer" + std::to_string(t);
      j->kind = t % 4;
      j->count = 1 + static_cast<size_t>((t * 37) % 500) + (t == 150 ? 300000 : 0);
      j->f.resize(j->count);
      j->i.resize(j->count);
      j->d.resize(j->count);
      jobs.push_back(std::move(j));
    }
    // Each rank submits in its own order: rotated by rank, reversed on odd rounds.
    std::vector<size_t> order(jobs.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = (k + rank * 17) % order.size();
    if (round % 2) std::reverse(order.begin(), order.end());
    std::vector<Handle> handles;
    for (size_t k : order) handles.push_back(submit(*jobs[k], rank));
    for (auto& h : handles) h.wait();
    for (auto& j : jobs) check(*j, size);
  }
  cohort::shutdown();
  std::cout << "rank " << rank << ": fused allreduces correct in 5 rounds of 300" << std::endl;
  return 0;
}
