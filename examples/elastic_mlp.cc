// An elastic training program: a small multi-layer perceptron classifier, trained with momentum
// SGD on a synthetic data set it generates, whose gradients are averaged across the workers with
// one grouped allreduce per step. Run it under `cohortrun` with a host-discovery script (see
// examples/elastic_demo.sh) and it keeps training while workers come, go and die.
//
// What survives a failure is in the State: weights, momentum buffers, the epoch and the elastic
// sampler. It also keeps, per epoch, how many times each sample was trained (from an allgather of
// every step's sample ids), so at the end of each epoch it can say that every sample was trained
// exactly once in the committed history.
//
//   cohortrun --host-discovery-script ./hosts.sh --min-np 2 elastic_mlp --epochs 8
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cohort/cohort.h"
#include "cohort/elastic/run.h"
#include "cohort/elastic/sampler.h"
#include "cohort/elastic/state.h"
#include "elastic_progress.h"

namespace {

using cohort::Tensor;

struct Options {
  int epochs = 8;
  int samples = 4096;
  int batch = 32;  // per worker
  int commit_every = 4;
  float learning_rate = 0.05f;
  float momentum = 0.9f;
  int step_delay_ms = 0;  // slows training down so a demo can act while it runs
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    double value = std::stod(argv[i + 1]);
    if (flag == "--epochs")
      o.epochs = static_cast<int>(value);
    else if (flag == "--samples")
      o.samples = static_cast<int>(value);
    else if (flag == "--batch")
      o.batch = static_cast<int>(value);
    else if (flag == "--commit-every")
      o.commit_every = static_cast<int>(value);
    else if (flag == "--lr")
      o.learning_rate = static_cast<float>(value);
    else if (flag == "--step-delay-ms")
      o.step_delay_ms = static_cast<int>(value);
    else
      throw std::invalid_argument("unknown flag " + flag + " (see the top of elastic_mlp.cc)");
  }
  return o;
}

// Gaussian blobs: each class has a random centre; a sample is its centre plus noise. Generated
// from a fixed seed, so every worker builds the same data set.
struct Dataset {
  static constexpr int kInputs = 16;
  static constexpr int kClasses = 8;
  std::vector<float> x;  // samples x kInputs
  std::vector<int> y;

  // The same centres for every `seed`; the seed picks the noise (training or held-out samples).
  Dataset(int samples, uint32_t seed) : x(static_cast<size_t>(samples) * kInputs), y(samples) {
    std::mt19937 centre_rng(2024);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> centres(kClasses * kInputs);
    for (float& c : centres) c = 0.6f * normal(centre_rng);
    std::mt19937 rng(seed);
    for (int s = 0; s < samples; ++s) {
      y[s] = s % kClasses;
      for (int i = 0; i < kInputs; ++i)
        x[s * kInputs + i] = centres[y[s] * kInputs + i] + normal(rng);
    }
  }
  const float* input(uint64_t s) const { return &x[s * kInputs]; }
};

// inputs -> hidden (ReLU) -> classes (softmax). Parameters and their gradients have the same
// layout, so one grouped allreduce moves all gradients.
struct Mlp {
  static constexpr int kHidden = 64;
  static constexpr int kIn = Dataset::kInputs, kOut = Dataset::kClasses;
  std::vector<float> w1, b1, w2, b2;

  Mlp() : w1(kHidden * kIn), b1(kHidden, 0.0f), w2(kOut * kHidden), b2(kOut, 0.0f) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& w : w1) w = normal(rng) * std::sqrt(2.0f / kIn);
    for (float& w : w2) w = normal(rng) * std::sqrt(1.0f / kHidden);
  }
  std::vector<std::vector<float>*> parameters() { return {&w1, &b1, &w2, &b2}; }
};

struct StepStats {
  float loss = 0, correct = 0, count = 0;
};

// Forward and backward for one sample: adds its gradients to `grad` and returns loss/accuracy.
void accumulate(const Mlp& m, const float* x, int label, Mlp& grad, StepStats& stats) {
  float hidden[Mlp::kHidden], logits[Mlp::kOut];
  for (int h = 0; h < Mlp::kHidden; ++h) {
    float z = m.b1[h];
    for (int i = 0; i < Mlp::kIn; ++i) z += m.w1[h * Mlp::kIn + i] * x[i];
    hidden[h] = z > 0 ? z : 0;
  }
  float top = -1e30f;
  for (int c = 0; c < Mlp::kOut; ++c) {
    logits[c] = m.b2[c];
    for (int h = 0; h < Mlp::kHidden; ++h) logits[c] += m.w2[c * Mlp::kHidden + h] * hidden[h];
    top = std::max(top, logits[c]);
  }
  float sum = 0, dlogit[Mlp::kOut];
  for (int c = 0; c < Mlp::kOut; ++c) sum += dlogit[c] = std::exp(logits[c] - top);
  int predicted = 0;
  for (int c = 0; c < Mlp::kOut; ++c) {
    dlogit[c] = dlogit[c] / sum - (c == label ? 1.0f : 0.0f);
    if (logits[c] > logits[predicted]) predicted = c;
  }
  stats.loss += std::log(sum) - (logits[label] - top);
  stats.correct += predicted == label;
  stats.count += 1;
  for (int c = 0; c < Mlp::kOut; ++c) {
    grad.b2[c] += dlogit[c];
    for (int h = 0; h < Mlp::kHidden; ++h) grad.w2[c * Mlp::kHidden + h] += dlogit[c] * hidden[h];
  }
  for (int h = 0; h < Mlp::kHidden; ++h) {
    if (hidden[h] <= 0) continue;
    float d = 0;
    for (int c = 0; c < Mlp::kOut; ++c) d += dlogit[c] * m.w2[c * Mlp::kHidden + h];
    grad.b1[h] += d;
    for (int i = 0; i < Mlp::kIn; ++i) grad.w1[h * Mlp::kIn + i] += d * x[i];
  }
}

class Trainer {
 public:
  explicit Trainer(Options o)
      : o_(o),
        data_(o.samples, /*seed=*/1),
        held_out_(1024, /*seed=*/2),
        sampler_(o.samples, /*seed=*/42),
        trained_(o.samples) {
    for (auto* p : model_.parameters()) velocity_.emplace_back(p->size(), 0.0f);
    track_state();
    state_.add_reset_callback([this] { progress_.on_reset(); });
  }

  void run() {
    cohort::elastic::run(state_, [this](cohort::elastic::State& s) { train(s); });
    if (cohort::rank() == 0) progress_.summary(held_out_accuracy(), trained_.every_epoch_once());
  }

 private:
  void track_state() {
    const char* names[] = {"w1", "b1", "w2", "b2"};
    auto params = model_.parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      state_.track(names[i], *params[i]);
      state_.track(std::string("velocity.") + names[i], velocity_[i]);
    }
    state_.track("epoch", epoch_);
    state_.track("step", step_);
    state_.track("epoch_totals", epoch_totals_);
    state_.track("trained", trained_.counts());
    state_.track("sampler", sampler_);
  }

  void train(cohort::elastic::State& s) {
    progress_.event("training");
    for (; epoch_ < o_.epochs; sampler_.set_epoch(++epoch_), s.commit()) {
      for (const auto& batch : sampler_.batches(o_.batch)) {
        StepStats stats = step(batch);
        epoch_totals_[0] += stats.loss;
        epoch_totals_[1] += stats.correct;
        epoch_totals_[2] += stats.count;
        if (++step_ % o_.commit_every == 0) s.commit();
        if (step_ % kProgressEvery == 0) progress_.step_done(mean_loss(stats));
      }
      s.commit();
      finish_epoch();
    }
  }

  static constexpr int kProgressEvery = 20;

  static float mean_loss(const StepStats& stats) {
    return stats.loss / std::max(stats.count, 1.0f);
  }

  // One SGD step over every worker's batch; returns the global loss sum, correct count, count.
  StepStats step(const std::vector<uint64_t>& batch) {
    Mlp& grad = grad_;
    zero(grad);
    StepStats stats;
    for (uint64_t s : batch) accumulate(model_, data_.input(s), data_.y[s], grad, stats);
    std::vector<float> totals{stats.loss, stats.correct, stats.count};
    std::vector<Tensor> tensors;
    for (auto* g : grad.parameters()) tensors.push_back(Tensor::of(*g));
    tensors.push_back(Tensor::of(totals));
    cohort::grouped_allreduce("mlp.gradients", tensors);
    stats = {totals[0], totals[1], totals[2]};
    if (stats.count > 0) apply(grad, 1.0f / stats.count);
    count_trained(batch);
    sampler_.record(batch);
    progress_.note_recovery();
    if (o_.step_delay_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(o_.step_delay_ms));
    return stats;
  }

  static void zero(Mlp& m) {
    for (auto* p : m.parameters()) std::fill(p->begin(), p->end(), 0.0f);
  }

  void apply(Mlp& grad, float scale) {
    auto params = model_.parameters();
    auto grads = grad.parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      for (size_t j = 0; j < params[i]->size(); ++j) {
        velocity_[i][j] = o_.momentum * velocity_[i][j] + (*grads[i])[j] * scale;
        (*params[i])[j] -= o_.learning_rate * velocity_[i][j];
      }
    }
  }

  // Every worker's sample ids of this step, counted into `trained_` on every worker.
  void count_trained(const std::vector<uint64_t>& batch) {
    std::vector<int64_t> mine(batch.begin(), batch.end());
    cohort::OwnedTensor all = cohort::allgather("mlp.sample_ids", Tensor::of(mine));
    trained_.add(all.as<int64_t>());
  }

  // The epoch's loss, accuracy and count come from its totals, kept in the State: an epoch that
  // resumes at its last commit (a reset at its end, with no step left to run) reports every step
  // it committed, not the zeros of no step.
  void finish_epoch() {
    progress_.note_recovery();  // a world that resumes at an epoch's end has no step to take
    StepStats stats{epoch_totals_[0], epoch_totals_[1], epoch_totals_[2]};
    std::fill(epoch_totals_.begin(), epoch_totals_.end(), 0.0f);
    int64_t once = trained_.finish_epoch();
    progress_.epoch_done(mean_loss(stats), stats.correct / std::max(stats.count, 1.0f), once,
                         trained_.samples());
  }

  // Accuracy on the held-out samples (rank 0 alone: the model is the same everywhere).
  double held_out_accuracy() {
    Mlp unused;
    StepStats stats;
    for (int s = 0; s < static_cast<int>(held_out_.y.size()); ++s) {
      accumulate(model_, held_out_.input(s), held_out_.y[s], unused, stats);
    }
    return stats.correct / stats.count;
  }

  Options o_;
  Dataset data_;
  Dataset held_out_;  // never trained on: the accuracy printed at the end
  Mlp model_;
  // The gradients, reused every step: the same buffers each time let the runtime keep its
  // communication set-up for them (a new allocation per step would be a "moved buffer").
  Mlp grad_;
  std::vector<std::vector<float>> velocity_;
  cohort::elastic::State state_;
  cohort::elastic::ElasticSampler sampler_;
  cohort_examples::TrainedCounts trained_;  // this epoch: how many times each sample was trained
  int64_t epoch_ = 0;
  int64_t step_ = 0;
  std::vector<float> epoch_totals_ = std::vector<float>(3, 0.0f);  // loss sum, correct, count
  cohort_examples::Progress progress_{
      "elastic_mlp", epoch_, step_, {.no_recoveries = "", .not_once = "NO"}};
};

}  // namespace

int main(int argc, char** argv) {
  try {
    Options options = parse(argc, argv);
    cohort::init();
    Trainer trainer(options);
    trainer.run();
    cohort::shutdown();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "elastic_mlp: " << e.what() << std::endl;
    return 1;
  }
}
