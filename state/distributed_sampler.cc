#include "cohort/elastic/distributed_sampler.h"

#include <string>

#include "cohort/cohort.h"
#include "state/permutation.h"

namespace cohort::elastic {

DistributedSampler::DistributedSampler(uint64_t dataset_size, int rank, int world_size,
                                       DistributedSamplerOptions options)
    : dataset_size_(dataset_size), rank_(rank), world_size_(world_size), options_(options) {
  detail::Permutation check(dataset_size, 0, 0);  // validates the size
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw InvalidArgument("DistributedSampler: rank " + std::to_string(rank) +
                          " is not in a world of size " + std::to_string(world_size));
  }
  auto w = static_cast<uint64_t>(world_size);
  num_samples_ = options.drop_last ? dataset_size / w : (dataset_size + w - 1) / w;
  if (num_samples_ == 0) {
    throw InvalidArgument("DistributedSampler: drop_last leaves no sample of " +
                          std::to_string(dataset_size) + " for each of " +
                          std::to_string(world_size) + " ranks");
  }
}

DistributedSampler::DistributedSampler(uint64_t dataset_size, DistributedSamplerOptions options)
    : DistributedSampler(dataset_size, cohort::rank(), cohort::size(), options) {}

uint64_t DistributedSampler::at(uint64_t i) const {
  if (i >= num_samples_) {
    throw InvalidArgument("DistributedSampler: index " + std::to_string(i) + " is past the " +
                          std::to_string(num_samples_) + " samples of this rank");
  }
  // Global slot g of the epoch's order; slots past the end repeat the order from its start.
  uint64_t g = static_cast<uint64_t>(rank_) + i * static_cast<uint64_t>(world_size_);
  detail::Permutation order(dataset_size_, options_.seed, epoch_, options_.shuffle);
  return order.at(g % dataset_size_);
}

std::vector<uint64_t> DistributedSampler::indices() const {
  std::vector<uint64_t> out;
  out.reserve(num_samples_);
  for (uint64_t i = 0; i < num_samples_; ++i) out.push_back(at(i));
  return out;
}

uint64_t DistributedSampler::steps(uint64_t batch_size) const {
  if (batch_size == 0) throw InvalidArgument("a batch needs at least one sample");
  return (num_samples_ + batch_size - 1) / batch_size;
}

Batches DistributedSampler::batches(uint64_t batch_size) const {
  uint64_t steps = this->steps(batch_size);
  uint64_t next = 0;
  return Batches(steps, [this, batch_size, next](std::vector<uint64_t>& batch) mutable {
    batch.clear();
    for (; batch.size() < batch_size && next < num_samples_; ++next) batch.push_back(at(next));
  });
}

}  // namespace cohort::elastic
