// The test trainer for elastic mode, started by fake_launcher as an elastic worker. It trains a
// model whose final value is known (see trainer_shape.h) under elastic::run, committing every few
// steps, and prints on stdout:
//   COMMITTED epoch=E samples=a,b,...   rank 0, after each commit: the samples it committed
//   RESET resets=N rank=R size=S        after each reset, from the reset callback
//   FINAL worker=ID rank=R size=S resets=N checksum=C
// Usage: elastic_trainer [KILL_AT_STEP]: SIGKILLs itself at that step of its first round.
// Exits 1 if the final model is not the expected one.
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <vector>

#include "cohort/cohort.h"
#include "cohort/elastic/run.h"
#include "cohort/elastic/sampler.h"
#include "cohort/elastic/state.h"
#include "test/elastic/trainer_shape.h"

using namespace cohort;
using namespace cohort::elastic;
using namespace cohort::elastic_test;

namespace {

// Rank 0's record of what the committed history holds: after each commit it prints the samples
// that the commit added to the epoch's committed set.
class CommitLog {
 public:
  explicit CommitLog(const ElasticSampler& sampler) : sampler_(sampler) {}

  // What is committed now was logged before (by this process, rank 0 then too).
  void start() {
    known_epoch_ = sampler_.epoch();
    known_.assign(kSamples, false);
    for (uint64_t s = 0; s < kSamples; ++s) known_[s] = sampler_.is_committed(s);
  }

  void after_commit() {
    if (cohort::rank() != 0) return;
    if (sampler_.epoch() != known_epoch_) {
      known_epoch_ = sampler_.epoch();
      known_.assign(kSamples, false);
    }
    std::ostringstream line;
    line << "COMMITTED epoch=" << known_epoch_ << " samples=";
    for (uint64_t s = 0; s < kSamples; ++s) {
      if (known_[s] || !sampler_.is_committed(s)) continue;
      known_[s] = true;
      line << s << ",";
    }
    std::cout << line.str() << std::endl;
  }

 private:
  const ElasticSampler& sampler_;
  uint64_t known_epoch_ = 0;
  std::vector<bool> known_;
};

void train_step(const std::vector<uint64_t>& batch, std::vector<float>& weights) {
  std::vector<float> grad(kWidth, 0.0f);
  for (uint64_t s : batch) {
    for (int i = 0; i < kWidth; ++i) grad[i] += gradient(s, i);
  }
  allreduce("grad", Tensor::of(grad));
  for (int i = 0; i < kWidth; ++i) weights[i] += grad[i];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t kill_at = argc > 1 ? std::atoll(argv[1]) : -1;
  init();
  State state;
  std::vector<float> weights(kWidth, 0.0f);
  int epoch = 0;
  int64_t step = 0;
  ElasticSampler sampler(kSamples, 7);
  state.track("weights", weights);
  state.track("epoch", epoch);
  state.track("step", step);
  state.track("sampler", sampler);
  state.add_reset_callback([] {
    std::cout << "RESET resets=" << resets() << " rank=" << rank() << " size=" << size()
              << std::endl;
  });
  CommitLog log(sampler);
  auto commit = [&](State& s) {
    uint64_t before = s.commit_count();
    try {
      s.commit();
    } catch (...) {
      if (s.commit_count() != before) log.after_commit();  // the hook threw after the commit
      throw;
    }
    log.after_commit();
  };

  run(state, [&](State& s) {
    log.start();
    while (epoch < kEpochs) {
      for (const auto& batch : sampler.batches(kBatch)) {
        train_step(batch, weights);
        sampler.record(batch);
        if (++step == kill_at && resets() == 0) std::raise(SIGKILL);
        if (step % kCommitEvery == 0) commit(s);
      }
      commit(s);  // the epoch's last samples, before set_epoch forgets them
      ++epoch;
      sampler.set_epoch(static_cast<uint64_t>(epoch));
      commit(s);
    }
  });

  double checksum = 0;
  bool exact = true;
  for (int i = 0; i < kWidth; ++i) {
    checksum += weights[i];
    exact = exact && weights[i] == expected_weight(i);
  }
  const char* id = std::getenv("COHORT_WORKER_ID");
  std::cout << "FINAL worker=" << (id ? id : "none") << " rank=" << rank() << " size=" << size()
            << " resets=" << resets() << " checksum=" << checksum << std::endl;
  shutdown();
  if (!exact) {
    std::cerr << "elastic_trainer: the final model is not the one every sample trained once gives"
              << std::endl;
    return 1;
  }
  return 0;
}
