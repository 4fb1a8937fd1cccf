// Allreduce benchmark: float32 sum from 8 B to 256 MiB, through Cohort and through the raw
// backend library on the same buffers, trials interleaved so both see the same noise.
//   cohortrun -np 2 ./allreduce_bench        (Cohort over Gloo vs raw Gloo)
//   mpirun -np 2 ./allreduce_bench           (Cohort over MPI vs raw MPI_Allreduce)
//   COHORT_CPU_OPERATIONS=gloo mpirun -np 2 ./allreduce_bench
//                                            (Cohort over Gloo vs raw Gloo and raw MPI)
// Times are the slowest rank's mean per operation; the table shows medians over trials.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <string>

#include "bench_util.h"
#include "cohort/cohort.h"
#include "core/config.h"
#include "raw_allreduce.h"

namespace {

using namespace cohort;
using namespace cohort::bench;

struct Options {
  size_t min_bytes = 8;
  size_t max_bytes = 256u << 20;
  size_t step = 2;
  int trials = 3;
  double batch_seconds = 0.1;
};

struct Row {
  std::vector<double> cohort;
  std::map<std::string, std::vector<double>> raw;
};

void print_header(const std::vector<std::unique_ptr<RawAllreduce>>& raws) {
  bool shm = backend_name() == "gloo" && Config::from_environment().shared_memory;
  std::printf("# Cohort allreduce over %s%s vs the raw libraries, %d ranks, float32 sum.\n",
              std::string(backend_name()).c_str(),
              shm ? " (shared memory among ranks of a host)" : "", cohort::size());
  std::printf(
      "# Times: slowest rank's mean per op; medians of interleaved trials. GB/s = 1e9 B/s.\n");
  std::printf("# busbw columns of the raw algorithms:");
  for (size_t i = 0; i < raws.size(); ++i) std::printf(" [%zu] %s", i, raws[i]->name().c_str());
  std::printf("\n%10s %11s %8s %8s %11s %8s", "size", "cohort_us", "algbw", "busbw", "best_raw_us",
              "busbw");
  for (size_t i = 0; i < raws.size(); ++i) std::printf("      [%zu]", i);
  std::printf(" %6s\n", "ratio");
}

void print_row(size_t bytes, const Row& row,
               const std::vector<std::unique_ptr<RawAllreduce>>& raws) {
  int n = cohort::size();
  double t = median(row.cohort);
  double best = 1e30;
  for (const auto& [name, times] : row.raw) best = std::min(best, median(times));
  std::printf("%10s %11.1f %8.3f %8.3f %11.1f %8.3f", human_bytes(bytes).c_str(), t * 1e6,
              algbw_gbps(bytes, t), allreduce_busbw_gbps(bytes, t, n), best * 1e6,
              allreduce_busbw_gbps(bytes, best, n));
  for (const auto& raw : raws) {
    auto it = row.raw.find(raw->name());
    if (it == row.raw.end()) {
      std::printf(" %8s", "-");
    } else {
      std::printf(" %8.3f", allreduce_busbw_gbps(bytes, median(it->second), n));
    }
  }
  std::printf(" %6.2f\n", best / t);
  std::fflush(stdout);
}

Row measure(size_t bytes, const Options& o, std::vector<std::unique_ptr<RawAllreduce>>& raws) {
  size_t count = bytes / sizeof(float);
  std::vector<float> buffer(count, 1.0f);
  Row row;
  int min_ops = bytes >= (64u << 20) ? 2 : 5;
  for (int trial = 0; trial < o.trials; ++trial) {
    row.cohort.push_back(
        time_per_op([&] { cohort::allreduce("bench.allreduce", Tensor::of(buffer)); },
                    start_together, slowest, o.batch_seconds, min_ops));
    for (auto& raw : raws) {
      if (bytes < raw->min_bytes()) continue;
      row.raw[raw->name()].push_back(time_per_op([&] { raw->run(buffer.data(), count); },
                                                 start_together, slowest, o.batch_seconds,
                                                 min_ops));
    }
  }
  return row;
}

// Under mpirun with COHORT_CPU_OPERATIONS=gloo, both libraries run raw beside Cohort.
std::vector<std::unique_ptr<RawAllreduce>> make_raws() {
  if (backend_name() == "mpi") return make_raw_mpi_allreduces();
  auto raws = make_raw_gloo_allreduces();
  if (Config::from_environment().launcher == Config::Launcher::kMpirun) {
    for (auto& raw : make_raw_mpi_allreduces()) raws.push_back(std::move(raw));
  }
  return raws;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("Cohort allreduce benchmark");
  app.add_option("--min-bytes", o.min_bytes, "smallest message")->capture_default_str();
  app.add_option("--max-bytes", o.max_bytes, "largest message")->capture_default_str();
  app.add_option("--step", o.step, "factor between consecutive sizes")
      ->capture_default_str()
      ->check(CLI::Range(2, 1024));
  app.add_option("--trials", o.trials, "interleaved trials per size")->capture_default_str();
  app.add_option("--batch-seconds", o.batch_seconds, "minimum duration of a timed batch")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  cohort::init();
  auto raws = make_raws();
  if (cohort::rank() == 0) print_header(raws);
  if (o.min_bytes < sizeof(float) || o.min_bytes > o.max_bytes) {
    std::fprintf(stderr, "allreduce_bench: need 4 <= --min-bytes <= --max-bytes\n");
    return 2;
  }
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.step) {
    Row row = measure(bytes, o, raws);
    if (cohort::rank() == 0) print_row(bytes, row, raws);
  }
  raws.clear();
  cohort::shutdown();
}
