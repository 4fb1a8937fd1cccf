// Sharded optimizer state, ZeRO-1 style, in C++: linear regression trained with momentum SGD,
// where each rank keeps the momentum of only its range of the weights (a ShardedBuffer in the
// State). Every step the gradients are averaged (allreduce); each rank updates its range of the
// weights with its momentum; an allgather of the ranges gives every rank the whole new weights.
// A failure costs only the steps since the last commit: the momentum ranges are committed in
// memory with a replica on another host, and resharded over whatever world comes next.
//
//   cohortrun -np 4 build/bin/sharded_sgd
//   cohortrun --host-discovery-script ./hosts.sh --min-np 2 build/bin/sharded_sgd --epochs 20
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "cohort/cohort.h"
#include "cohort/elastic/run.h"
#include "cohort/elastic/sampler.h"
#include "cohort/elastic/sharded.h"
#include "cohort/elastic/state.h"

namespace {

using cohort::Tensor;

constexpr int kFeatures = 1024;
constexpr uint64_t kSamples = 1024;
constexpr uint64_t kBatch = 16;                   // per rank
constexpr float kRate = 5e-5f, kMomentum = 0.9f;  // stable: rate * 2 * |x|^2 < 2 (1 - momentum)

// Sample i's features and target: a fixed random linear function of the features.
struct Data {
  std::vector<float> x, y;
  Data() : x(kSamples * kFeatures), y(kSamples) {
    std::mt19937 gen(3);
    std::normal_distribution<float> normal;
    std::vector<float> truth(kFeatures);
    for (float& t : truth) t = normal(gen) / std::sqrt(float(kFeatures));
    for (uint64_t i = 0; i < kSamples; ++i) {
      for (int f = 0; f < kFeatures; ++f) x[i * kFeatures + f] = normal(gen);
      for (int f = 0; f < kFeatures; ++f) y[i] += truth[f] * x[i * kFeatures + f];
    }
  }
};

// The batch's mean squared error, and its gradient (summed over the batch) into `grad`.
double loss_and_gradient(const Data& d, const std::vector<float>& w,
                         const std::vector<uint64_t>& batch, std::vector<float>& grad) {
  std::fill(grad.begin(), grad.end(), 0.0f);
  double loss = 0;
  for (uint64_t i : batch) {
    const float* xi = &d.x[i * kFeatures];
    float err = -d.y[i];
    for (int f = 0; f < kFeatures; ++f) err += w[f] * xi[f];
    loss += double(err) * err;
    for (int f = 0; f < kFeatures; ++f) grad[f] += 2 * err * xi[f];
  }
  return loss / double(std::max<size_t>(batch.size(), 1));
}

struct Trainer {
  Data data;
  std::vector<float> weights = std::vector<float>(kFeatures, 0.0f);
  cohort::elastic::ShardedBuffer<float> momentum{kFeatures};  // this rank's range only
  cohort::elastic::ElasticSampler sampler{kSamples, /*seed=*/11};
  uint64_t epoch = 0;
  std::vector<float> grad = std::vector<float>(kFeatures);

  // One step: average the gradient, update this rank's range, gather every range.
  double step(const std::vector<uint64_t>& batch) {
    double loss = loss_and_gradient(data, weights, batch, grad);
    cohort::allreduce("sgd.grad", Tensor::of(grad), {.op = cohort::ReduceOp::kAverage});
    cohort::elastic::ShardRange r = momentum.range();
    std::span<float> m = momentum.local();
    std::vector<float> mine(r.size());
    for (uint64_t g = r.begin; g < r.end; ++g) {
      float& v = m[g - r.begin];
      v = kMomentum * v + grad[g] / float(kBatch);
      mine[g - r.begin] = weights[g] - kRate * v;
    }
    cohort::OwnedTensor all = cohort::allgather("sgd.weights", Tensor::of(mine));
    std::copy_n(all.as<float>().begin(), kFeatures, weights.begin());
    sampler.record(batch);
    return loss;
  }

  void train(cohort::elastic::State& state, uint64_t epochs) {
    for (; epoch < epochs; sampler.set_epoch(++epoch), state.commit()) {
      double loss = 0;
      int steps = 0;
      for (const auto& batch : sampler.batches(kBatch)) {
        loss += step(batch);
        if (++steps % 8 == 0) state.commit();
      }
      state.commit();
      if (cohort::rank() == 0) {
        std::cout << "sharded_sgd: epoch " << epoch << " loss " << loss / std::max(steps, 1) << " ("
                  << cohort::size() << " ranks, this one holding momentum ["
                  << momentum.range().begin << ", " << momentum.range().end << "))" << std::endl;
      }
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  uint64_t epochs = argc > 2 && std::string(argv[1]) == "--epochs" ? std::stoull(argv[2]) : 5;
  cohort::init();
  Trainer t;
  cohort::elastic::State state;
  state.track("weights", t.weights);
  state.track("momentum", t.momentum);
  state.track("sampler", t.sampler);
  state.track("epoch", t.epoch);
  cohort::elastic::run(state, [&](cohort::elastic::State& s) { t.train(s, epochs); });
  cohort::shutdown();
}
