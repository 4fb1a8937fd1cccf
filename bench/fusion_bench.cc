// Fusion benchmark: a "training step" that submits N float32 gradients of S bytes each
// asynchronously and waits for all, the same N tensors as one grouped allreduce, against one
// Cohort allreduce of N*S bytes and against N separate allreduces of the raw library (on one
// reused buffer: its fastest case).
//   cohortrun -np 2 ./fusion_bench        mpirun -np 2 ./fusion_bench
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <vector>

#include "bench_util.h"
#include "cohort/cohort.h"
#include "raw_allreduce.h"

namespace {

using namespace cohort;
using namespace cohort::bench;

struct Case {
  size_t tensors;
  size_t bytes;
};

void run_case(const Case& c, int trials, RawAllreduce& raw) {
  size_t floats = c.bytes / sizeof(float);
  std::vector<std::vector<float>> grads(c.tensors, std::vector<float>(floats, 1.0f));
  std::vector<std::string> names;
  for (size_t t = 0; t < c.tensors; ++t) names.push_back("grad" + std::to_string(t));
  std::vector<float> whole(floats * c.tensors, 1.0f);
  std::vector<float> one(floats, 1.0f);
  std::vector<Handle> handles(c.tensors);
  auto step = [&] {
    for (size_t t = 0; t < c.tensors; ++t) {
      handles[t] = allreduce_async(names[t], Tensor::of(grads[t]));
    }
    for (auto& h : handles) h.wait();
  };
  std::vector<Tensor> group;
  for (auto& g : grads) group.push_back(Tensor::of(g));
  auto grouped = [&] { cohort::grouped_allreduce("bench.group", group); };
  auto single = [&] { cohort::allreduce("bench.whole", Tensor::of(whole)); };
  auto separate = [&] {
    for (size_t t = 0; t < c.tensors; ++t) raw.run(one.data(), floats);
  };
  std::vector<double> t_step, t_group, t_single, t_raw;
  for (int trial = 0; trial < trials; ++trial) {
    t_step.push_back(time_per_op(step, start_together, slowest, 0.2, 3));
    t_group.push_back(time_per_op(grouped, start_together, slowest, 0.2, 3));
    t_single.push_back(time_per_op(single, start_together, slowest, 0.2, 3));
    t_raw.push_back(time_per_op(separate, start_together, slowest, 0.2, 1));
  }
  double s = median(t_step), g = median(t_group), w = median(t_single), r = median(t_raw);
  if (cohort::rank() == 0) {
    std::printf("%6zu x %-8s %12.2f %10.2f %14.2f %8.2f %8.2f %16.2f %9.1f\n", c.tensors,
                human_bytes(c.bytes).c_str(), s * 1e3, g * 1e3, w * 1e3, s / w, g / w, r * 1e3,
                r / s);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 5;
  Case only{0, 0};
  CLI::App app("Cohort fusion benchmark");
  app.add_option("--trials", trials, "interleaved trials")->capture_default_str();
  app.add_option("--tensors", only.tensors, "run only this many tensors per step (with --bytes)");
  app.add_option("--bytes", only.bytes, "bytes per tensor (with --tensors)");
  CLI11_PARSE(app, argc, argv);
  cohort::init();
  auto raws = backend_name() == "mpi" ? make_raw_mpi_allreduces() : make_raw_gloo_allreduces();
  RawAllreduce& raw = *raws.front();
  if (cohort::rank() == 0) {
    std::printf("# Fusion: %d ranks, %s, medians of %d interleaved trials; raw = %s\n",
                cohort::size(), std::string(backend_name()).c_str(), trials, raw.name().c_str());
    std::printf("%17s %12s %10s %14s %8s %8s %16s %9s\n", "step", "step_ms", "group_ms",
                "one_whole_ms", "ratio", "g_ratio", "raw_separate_ms", "speedup");
  }
  std::vector<Case> cases = {{1000, 1024}, {100, 64 * 1024}, {10, 16u << 20}};
  if (only.tensors > 0 && only.bytes > 0) cases = {only};
  for (Case c : cases) run_case(c, trials, raw);
  raws.clear();
  cohort::shutdown();
}
