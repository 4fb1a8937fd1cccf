// Idle cost and steady-state latency of the engine.
//   cohortrun -np 2 ./idle_bench [--idle-seconds 5]
// 1. Idle: after one collective, every rank sleeps; the CPU time its whole process used meanwhile
//    (background thread, Gloo's device thread, control channel) is reported as % of one core.
// 2. Cached step: one small allreduce submitted again and again (cached after its first round),
//    against the same allreduce of the raw library on the same buffer in the same run. The
//    difference is what the engine adds per step.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "cohort/cohort.h"
#include "raw_allreduce.h"

namespace {

using namespace cohort;
using namespace cohort::bench;

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](timeval t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double idle_core_percent(double idle_seconds) {
  std::vector<float> warm(256, 1.0f);
  allreduce("idle.warm", Tensor::of(warm));
  double cpu = cpu_seconds();
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(idle_seconds));
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double used = (cpu_seconds() - cpu) / wall * 100.0;
  barrier("idle.done");
  return used;
}

}  // namespace

int main(int argc, char** argv) {
  double idle_seconds = 5;
  int trials = 5;
  size_t bytes = 1024;
  CLI::App app("Cohort idle cost and cached-step latency");
  app.add_option("--idle-seconds", idle_seconds, "how long to stay idle")->capture_default_str();
  app.add_option("--trials", trials, "interleaved latency trials")->capture_default_str();
  app.add_option("--bytes", bytes, "allreduce size for the latency")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  cohort::init();
  double idle = idle_core_percent(idle_seconds);
  double worst_idle = slowest(idle);
  auto raws = backend_name() == "mpi" ? make_raw_mpi_allreduces() : make_raw_gloo_allreduces();
  RawAllreduce& raw = *raws.front();
  std::vector<float> data(bytes / sizeof(float), 1.0f);
  auto step = [&] { allreduce("idle.step", Tensor::of(data)); };
  auto direct = [&] { raw.run(data.data(), data.size()); };
  std::vector<double> t_step, t_raw;
  for (int trial = 0; trial < trials; ++trial) {
    t_step.push_back(time_per_op(step, start_together, slowest, 0.2, 3));
    t_raw.push_back(time_per_op(direct, start_together, slowest, 0.2, 3));
  }
  if (cohort::rank() == 0) {
    std::printf("# %d ranks, %s; raw = %s\n", cohort::size(), std::string(backend_name()).c_str(),
                raw.name().c_str());
    std::printf("idle: %.2f %% of one core (busiest rank, %.0f s asleep)\n", worst_idle,
                idle_seconds);
    double s = median(t_step), r = median(t_raw);
    std::printf("cached %s allreduce step: %.1f us, raw %.1f us, engine adds %.1f us\n",
                human_bytes(bytes).c_str(), s * 1e6, r * 1e6, (s - r) * 1e6);
  }
  raws.clear();
  cohort::shutdown();
}
