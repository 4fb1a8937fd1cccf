// Recovery time of elastic training: one worker is SIGKILLed mid-training and the survivors
// recover (detect the failure, tear down, get the new round from cohortrun, connect, sync the
// state) and complete a training step. Run it through bench/elastic_recovery_bench.sh, which
// starts cohortrun in elastic mode and prints the table.
//
// Each step allreduces a gradient of --grad-mib MiB (default: the model's size) and commits a
// model of --mib MiB of float32 (and, with --sharded-mib M, M MiB of float32 sharded over the
// ranks with its replicas: the report then adds resharded_mib, the sharded MiB the survivors
// received in the sync, summed). At step --kill-step, rank --kill-rank (default 1; -1: the last)
// writes the time to --kill-time-file and SIGKILLs itself, or with --kill-parent 1 its parent
// first (a cohortrun agent, whose node's workers all die with it); once per job: the first
// process to create --marker does. After the
// recovery's first step, the new rank 0 prints one line with each phase's maximum over the
// survivors, in milliseconds:
//   recovery: size=S detect=D teardown=T assignment=A connect=C sync=Y step=P total=X at=W
// where W is the wall-clock time (ms since the epoch) when that first step completed.
// detect runs from the kill to the start of the reset (it includes the restore's memcpy); the
// clocks are the machine's wall clock, which every process here shares. Each process also prints
// "first-step: wall=MS" when its first step completes (for the scale-up measurement).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cohort/cohort.h"
#include "cohort/elastic/run.h"
#include "cohort/elastic/sharded.h"
#include "cohort/elastic/state.h"

namespace {

using cohort::Tensor;

struct Options {
  double mib = 16;
  double grad_mib = -1;  // default: mib
  int steps = 12;
  int kill_step = 4;
  std::string marker;
  std::string kill_time_file;
  int kill_rank = 1;         // -1: the last rank
  bool kill_parent = false;  // SIGKILL the parent (a cohortrun agent: its whole node) instead
  double sharded_mib = 0;    // a sharded value (optimizer moments) of this size, 0: none
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--mib") {
      o.mib = std::stod(value);
    } else if (flag == "--grad-mib") {
      o.grad_mib = std::stod(value);
    } else if (flag == "--steps") {
      o.steps = std::stoi(value);
    } else if (flag == "--kill-step") {
      o.kill_step = std::stoi(value);
    } else if (flag == "--marker") {
      o.marker = value;
    } else if (flag == "--kill-time-file") {
      o.kill_time_file = value;
    } else if (flag == "--kill-rank") {
      o.kill_rank = std::stoi(value);
    } else if (flag == "--sharded-mib") {
      o.sharded_mib = std::stod(value);
    } else if (flag == "--kill-parent") {
      o.kill_parent = value == "1";
    } else {
      throw std::invalid_argument("unknown flag " + flag);
    }
  }
  if (o.grad_mib < 0) o.grad_mib = o.mib;
  return o;
}

double wall_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(system_clock::now().time_since_epoch()).count();
}

size_t floats_in(double mib) {
  return static_cast<size_t>(mib * (1 << 20) / sizeof(float));
}

double ms(std::chrono::microseconds d) {
  return static_cast<double>(d.count()) / 1000.0;
}

class Bench {
 public:
  explicit Bench(Options o)
      : o_(std::move(o)), model_(floats_in(o_.mib), 1.0f), grad_(floats_in(o_.grad_mib)) {
    state_.track("model", model_);
    state_.track("step", step_);
    if (o_.sharded_mib > 0) {
      moments_ =
          std::make_unique<cohort::elastic::ShardedBuffer<float>>(floats_in(o_.sharded_mib), 1.0f);
      state_.track("moments", *moments_);
    }
    state_.add_reset_callback([this] {
      reset_done_ = wall_ms();
      recovering_ = true;
    });
  }

  void run() {
    cohort::elastic::run(state_, [this](cohort::elastic::State& s) {
      synced_ = wall_ms();
      while (step_ < o_.steps) step(s);
    });
  }

 private:
  void step(cohort::elastic::State& s) {
    if (step_ == o_.kill_step) maybe_die();
    std::fill(grad_.begin(), grad_.end(), 0.5f);
    cohort::allreduce("grad", Tensor::of(grad_));
    model_[0] += grad_[0];
    ++step_;
    s.commit();
    if (!stepped_once_) first_step();
    if (recovering_) report();
  }

  // For the scale-up measurement (bench/elastic_scaleup_bench.sh): when this process's first
  // step completed.
  void first_step() {
    stepped_once_ = true;
    std::printf("first-step: wall=%.3f\n", wall_ms());
    std::fflush(stdout);
  }

  void maybe_die() {
    int victim = o_.kill_rank < 0 ? cohort::size() - 1 : o_.kill_rank;
    if (cohort::rank() != victim || o_.marker.empty()) return;
    int fd = ::open(o_.marker.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) return;
    ::close(fd);
    std::ofstream(o_.kill_time_file) << std::fixed << wall_ms() << std::endl;
    // An agent's workers die with it (PR_SET_PDEATHSIG): this one too.
    if (o_.kill_parent) ::kill(::getppid(), SIGKILL);
    std::raise(SIGKILL);
  }

  // Each phase's maximum over the survivors, printed by the new rank 0.
  void report() {
    recovering_ = false;
    double stepped = wall_ms();
    double killed = 0;
    std::ifstream(o_.kill_time_file) >> killed;
    auto t = cohort::elastic::last_reset_timings();
    double reset_started = reset_done_ - ms(t.teardown + t.assignment + t.connect);
    std::vector<double> phases{
        reset_started - killed, ms(t.teardown),
        ms(t.assignment),       ms(t.connect),
        synced_ - reset_done_,  stepped - synced_,
        stepped - killed,       static_cast<double>(state_.last_reshard_bytes())};
    cohort::OwnedTensor all = cohort::allgather("recovery.phases", Tensor::of(phases));
    auto values = all.as<double>();
    double moved = phases.back();  // the sharded bytes received, summed over the survivors
    for (size_t r = 1; r < values.size() / phases.size(); ++r) {
      for (size_t i = 0; i < phases.size(); ++i) {
        phases[i] = std::max(phases[i], values[r * phases.size() + i]);
      }
      moved += values[r * phases.size() + phases.size() - 1];
    }
    if (cohort::rank() != 0) return;
    std::printf(
        "recovery: size=%d detect=%.1f teardown=%.1f assignment=%.1f connect=%.1f sync=%.1f "
        "step=%.1f total=%.1f at=%.3f%s\n",
        cohort::size(), phases[0], phases[1], phases[2], phases[3], phases[4], phases[5], phases[6],
        stepped,
        o_.sharded_mib > 0 ? (" resharded_mib=" + std::to_string(moved / (1 << 20))).c_str() : "");
    std::fflush(stdout);
  }

  Options o_;
  cohort::elastic::State state_;
  std::vector<float> model_;
  std::vector<float> grad_;
  std::unique_ptr<cohort::elastic::ShardedBuffer<float>> moments_;
  int64_t step_ = 0;
  bool recovering_ = false;
  bool stepped_once_ = false;
  double reset_done_ = 0;
  double synced_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  try {
    Options options = parse(argc, argv);
    cohort::init();
    Bench bench(options);
    bench.run();
    cohort::shutdown();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "elastic_recovery_bench: " << e.what() << std::endl;
    return 1;
  }
}
