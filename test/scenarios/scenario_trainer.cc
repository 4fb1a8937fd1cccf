// The trainer of the elastic scenario tests: a deterministic "model" trained under
// cohort::elastic::run, with failures injected on request, that proves at the end that the
// committed history trained every sample exactly once per epoch.
//
// Every step, each rank adds a gradient computed from its batch's sample ids to the model
// (allreduce sum), and the ranks allgather the ids into a history kept in the State. Both are
// integers held in doubles, so the final model is exact: rank 0 compares it with the value that
// training each sample once per epoch gives, and checks the history itself, then prints
// "trainer: exactly once".
//
// With --sharded N, the State also holds N "moments" sharded over the ranks (ShardedBuffer): each
// rank adds the step's gradient to the elements of its own range, so element g must always equal
// model element g % model-size; every rank checks its range at the end and after every sync
// ("trainer: sharded moments match"), which proves each reshard and restore moved the right bytes.
//
// Log lines (one per event) that the scenario scripts wait for:
//   trainer: start worker=<id> rank=R size=S resets=N epoch=E
//   trainer: epoch E done rank=R size=S resets=N
//   trainer: finished epochs=E resets=N
//   trainer: got SIGUSR1 worker=<id>   (with --usr1-handler 1: a handler of its own, before init)
//   trainer: sharded moments match rank=R size=S range=B-E received=BYTES   (with --sharded N;
//            BYTES: what the last sync's reshard brought this rank from others)
//   trainer: saved checkpoint N epoch=E   (with --checkpoint-dir DIR: a save after each epoch,
//                                          and run()'s fallback to it, RunOptions)
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cereal/types/map.hpp>
#include <cereal/types/vector.hpp>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cohort/cohort.h"
#include "cohort/elastic/checkpoint.h"
#include "cohort/elastic/run.h"
#include "cohort/elastic/sampler.h"
#include "cohort/elastic/sharded.h"
#include "cohort/elastic/state.h"

namespace {

using cohort::Tensor;
using History = std::map<uint64_t, std::vector<uint64_t>>;  // epoch -> samples trained

struct Options {
  uint64_t samples = 240;
  uint64_t batch = 4;
  uint64_t epochs = 3;  // at least this many; more while --until-file is missing
  int commit_every = 2;
  int model_size = 1024;
  int step_delay_ms = 0;
  uint64_t sharded = 0;        // elements of the sharded moments; 0: none
  std::string until_file;      // keep starting epochs until it exists (checked collectively)
  std::string checkpoint_dir;  // saves after every epoch, and run() falls back on them
  // Failure injection: the rank that is `fail_rank` at global step `fail_step` fails `fail_how`
  // (kill, throw, stop, or exit0: it leaves with status 0, as a worker that finished early), once
  // per job: the first process to create `fail_marker` does it.
  long fail_step = -1;
  int fail_rank = 1;
  std::string fail_how = "kill";
  std::string fail_marker;
  // Signals: --usr1-handler 1 installs a SIGUSR1 handler before init(), so the runtime leaves it;
  // the worker whose COHORT_WORKER_ID is --usr1-dies puts SIGUSR1's default back after init().
  bool usr1_handler = false;
  std::string usr1_dies;
};

std::atomic<int> g_usr1{0};
extern "C" void on_usr1(int) {
  g_usr1.fetch_add(1);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--samples")
      o.samples = std::stoull(value);
    else if (flag == "--batch")
      o.batch = std::stoull(value);
    else if (flag == "--epochs")
      o.epochs = std::stoull(value);
    else if (flag == "--commit-every")
      o.commit_every = std::stoi(value);
    else if (flag == "--model-size")
      o.model_size = std::stoi(value);
    else if (flag == "--sharded")
      o.sharded = std::stoull(value);
    else if (flag == "--step-delay-ms")
      o.step_delay_ms = std::stoi(value);
    else if (flag == "--until-file")
      o.until_file = value;
    else if (flag == "--checkpoint-dir")
      o.checkpoint_dir = value;
    else if (flag == "--fail-step")
      o.fail_step = std::stol(value);
    else if (flag == "--fail-rank")
      o.fail_rank = std::stoi(value);
    else if (flag == "--fail-how")
      o.fail_how = value;
    else if (flag == "--fail-marker")
      o.fail_marker = value;
    else if (flag == "--usr1-handler")
      o.usr1_handler = value == "1";
    else if (flag == "--usr1-dies")
      o.usr1_dies = value;
    else
      throw std::invalid_argument("unknown flag " + flag);
  }
  return o;
}

double gradient(uint64_t sample, int i) {
  return static_cast<double>(sample % 13 + i % 5);
}

void maybe_fail(const Options& o, long step) {
  if (step != o.fail_step || cohort::rank() != o.fail_rank || o.fail_marker.empty()) return;
  int fd = ::open(o.fail_marker.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  if (fd < 0) return;  // another process already failed
  ::close(fd);
  std::cout << "trainer: failing (" << o.fail_how << ") at step " << step << " as rank "
            << cohort::rank() << std::endl;
  if (o.fail_how == "kill") raise(SIGKILL);
  if (o.fail_how == "stop") raise(SIGSTOP);
  if (o.fail_how == "exit0") std::_Exit(0);  // std::endl flushed the line above
  throw std::runtime_error("injected failure at step " + std::to_string(step));
}

// Every rank's batch, in rank order, as one list of sample ids.
std::vector<uint64_t> gather_batch(const std::vector<uint64_t>& batch) {
  std::vector<int64_t> mine(batch.begin(), batch.end());
  cohort::OwnedTensor all = cohort::allgather("trainer.batch", Tensor::of(mine));
  auto ids = all.as<int64_t>();
  return {ids.begin(), ids.end()};
}

bool all_see_file(const std::string& path) {
  int32_t present = path.empty() || ::access(path.c_str(), F_OK) == 0;
  std::vector<int32_t> flag{present};
  cohort::allreduce("trainer.until", Tensor::of(flag), {.op = cohort::ReduceOp::kMin});
  return flag[0] != 0;
}

const cohort::elastic::State* g_state = nullptr;  // the Trainer's, for its exit line

class Trainer {
 public:
  explicit Trainer(Options o)
      : o_(std::move(o)),
        sampler_(o_.samples, /*seed=*/7),
        model_(o_.model_size, 0.0),
        grad_(o_.model_size) {
    state_.track("model", model_);
    state_.track("history", history_);
    state_.track("epoch", epoch_);
    state_.track("step", step_);
    state_.track("sampler", sampler_);
    if (o_.sharded > 0) {
      moments_.emplace(o_.sharded);
      state_.track("moments", *moments_);
    }
    state_.add_reset_callback([this] { ++resets_; });
    // A worker told to leave exits inside elastic::run (std::exit(0)): its last word is what the
    // job had committed, which the launcher's metrics must show (drain and stop scenarios).
    g_state = &state_;
    std::atexit([] {
      if (g_state)
        std::cout << "trainer: at exit, samples committed " << g_state->samples_committed()
                  << std::endl;
    });
  }
  ~Trainer() { g_state = nullptr; }
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  void train() {
    cohort::elastic::run(state_, [this](cohort::elastic::State& s) { train_epochs(s); },
                         {o_.checkpoint_dir});
  }

  // Rank 0: the committed history trains each sample once per epoch, and the model says so too.
  void verify() const {
    check_moments();
    if (cohort::rank() != 0) return;
    for (const auto& [epoch, ids] : history_) {
      std::vector<int> seen(o_.samples, 0);
      for (uint64_t id : ids) {
        if (id >= o_.samples || ++seen[id] > 1) fail("epoch " + std::to_string(epoch), id);
      }
      for (uint64_t id = 0; id < o_.samples; ++id) {
        if (seen[id] == 0) fail("epoch " + std::to_string(epoch) + " never trained", id);
      }
    }
    for (int i = 0; i < o_.model_size; ++i) {
      double want = 0;
      for (uint64_t id = 0; id < o_.samples; ++id) want += gradient(id, i);
      want *= static_cast<double>(history_.size());
      if (model_[i] != want) fail("model element " + std::to_string(i) + " is off", model_[i]);
    }
    std::cout << "trainer: exactly once: " << history_.size() << " epochs of " << o_.samples
              << " samples" << std::endl;
  }

 private:
  [[noreturn]] static void fail(const std::string& what, double value) {
    std::cerr << "trainer FAILED: " << what << " (" << value << ")" << std::endl;
    std::exit(1);
  }

  // Every rank: its range of the moments equals the model elements it shadows.
  void check_moments() const {
    if (!moments_) return;
    cohort::elastic::ShardRange r = moments_->range();
    auto local = moments_->local();
    for (uint64_t g = r.begin; g < r.end; ++g) {
      if (local[g - r.begin] != model_[g % o_.model_size]) {
        fail("sharded moment " + std::to_string(g) + " is off (model " +
                 std::to_string(model_[g % o_.model_size]) + ")",
             local[g - r.begin]);
      }
    }
    std::cout << "trainer: sharded moments match rank=" << cohort::rank()
              << " size=" << cohort::size() << " range=" << r.begin << "-" << r.end
              << " received=" << state_.last_reshard_bytes() << std::endl;
  }

  void train_epochs(cohort::elastic::State& s) {
    check_moments();
    std::cout << "trainer: start worker=" << worker_id() << " rank=" << cohort::rank()
              << " size=" << cohort::size() << " resets=" << resets_ << " epoch=" << epoch_
              << std::endl;
    while (epoch_ < o_.epochs || !all_see_file(o_.until_file)) {
      for (const auto& batch : sampler_.batches(o_.batch)) step(s, batch);
      s.commit();
      std::cout << "trainer: epoch " << epoch_ << " done rank=" << cohort::rank()
                << " size=" << cohort::size() << " resets=" << resets_ << std::endl;
      if (g_usr1.exchange(0) > 0)
        std::cout << "trainer: got SIGUSR1 worker=" << worker_id() << std::endl;
      sampler_.set_epoch(++epoch_);
      s.commit();
      if (!o_.checkpoint_dir.empty()) {
        auto saved = cohort::elastic::save(s, o_.checkpoint_dir);
        std::cout << "trainer: saved checkpoint " << saved.sequence << " epoch=" << epoch_
                  << std::endl;
      }
    }
    std::cout << "trainer: finished epochs=" << epoch_ << " resets=" << resets_ << std::endl;
  }

  void step(cohort::elastic::State& s, const std::vector<uint64_t>& batch) {
    maybe_fail(o_, step_);
    std::fill(grad_.begin(), grad_.end(), 0.0);
    for (uint64_t id : batch) {
      for (int i = 0; i < o_.model_size; ++i) grad_[i] += gradient(id, i);
    }
    cohort::allreduce("trainer.grad", Tensor::of(grad_));
    for (int i = 0; i < o_.model_size; ++i) model_[i] += grad_[i];
    if (moments_) {
      auto local = moments_->local();
      for (uint64_t g = moments_->range().begin; g < moments_->range().end; ++g) {
        local[g - moments_->range().begin] += grad_[g % o_.model_size];
      }
    }
    auto all = gather_batch(batch);
    auto& trained = history_[epoch_];
    trained.insert(trained.end(), all.begin(), all.end());
    sampler_.record(batch);
    if (o_.step_delay_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(o_.step_delay_ms));
    }
    if (++step_ % o_.commit_every == 0) s.commit();
  }

  static std::string worker_id() {
    const char* id = std::getenv("COHORT_WORKER_ID");
    return id ? id : "-";
  }

  Options o_;
  cohort::elastic::State state_;
  cohort::elastic::ElasticSampler sampler_;
  std::vector<double> model_;
  std::vector<double> grad_;
  std::optional<cohort::elastic::ShardedBuffer<double>> moments_;
  History history_;
  uint64_t epoch_ = 0;
  long step_ = 0;
  int resets_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  try {
    Options options = parse(argc, argv);
    if (options.usr1_handler) ::signal(SIGUSR1, on_usr1);
    cohort::init();
    const char* id = std::getenv("COHORT_WORKER_ID");
    if (id && options.usr1_dies == id) ::signal(SIGUSR1, SIG_DFL);
    Trainer trainer(options);
    trainer.train();
    trainer.verify();
    cohort::shutdown();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "trainer: " << e.what() << std::endl;
    return 3;
  }
}
