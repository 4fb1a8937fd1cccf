// DistributedSampler for a fixed world, as PyTorch users know it: each epoch shuffles the dataset
// with (seed, epoch), and rank r takes every world_size-th sample starting at r. With drop_last
// the tail that does not divide evenly is dropped; without it the order is padded by repeating
// its first samples. Either way every rank gets the same number of samples, so a loop over
// batches(b) runs the same number of steps everywhere and cannot hang on an uneven last batch.
#pragma once

#include <cstdint>
#include <vector>

#include "cohort/elastic/batches.h"

namespace cohort::elastic {

// How DistributedSampler orders and cuts an epoch.
struct DistributedSamplerOptions {
  bool shuffle = true;     // a new order every epoch; false keeps 0, 1, 2, ...
  uint64_t seed = 0;       // with the epoch, picks the order; every rank must use the same
  bool drop_last = false;  // drop the uneven tail instead of padding with repeated samples
};

// Sampling for a fixed world (how it splits an epoch: the top of distributed_sampler.h).
class DistributedSampler {
 public:
  // Samples [0, dataset_size) (1 to 2^48) over ranks [0, world_size).
  DistributedSampler(uint64_t dataset_size, int rank, int world_size,
                     DistributedSamplerOptions options = {});
  // Over cohort::rank() of cohort::size() (call cohort::init() first).
  explicit DistributedSampler(uint64_t dataset_size, DistributedSamplerOptions options = {});

  // Reshuffles for `epoch` (when shuffling); call it at the start of every epoch.
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  // The epoch set last (0 at first).
  uint64_t epoch() const { return epoch_; }

  // Samples per rank: ceil(n / world) when padding, floor(n / world) with drop_last.
  uint64_t num_samples() const { return num_samples_; }
  // num_samples() * world_size.
  uint64_t total_size() const { return num_samples_ * static_cast<uint64_t>(world_size_); }
  // This rank's i-th sample of the epoch, i < num_samples().
  uint64_t at(uint64_t i) const;
  // This rank's samples of the epoch, in order: at(0), at(1), ...
  std::vector<uint64_t> indices() const;
  // ceil(num_samples() / batch_size): the same on every rank.
  uint64_t steps(uint64_t batch_size) const;
  // This rank's samples, batch_size at a time: exactly steps(batch_size) batches.
  Batches batches(uint64_t batch_size) const;

 private:
  uint64_t dataset_size_;
  int rank_;
  int world_size_;
  DistributedSamplerOptions options_;
  uint64_t epoch_ = 0;
  uint64_t num_samples_;
};

}  // namespace cohort::elastic
