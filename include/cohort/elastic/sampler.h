// The elastic sampler: hands each rank its share of an epoch, in a deterministic shuffled order,
// such that across any sequence of failures (rollbacks) and changes of world size, the committed
// history trains every sample of an epoch exactly once.
//
//   ElasticSampler sampler(dataset_size, /*seed=*/42);
//   state.track("sampler", sampler);                 // State merges it at every commit
//   for (const auto& batch : sampler.batches(32)) {   // this rank's unprocessed samples
//     train_step(batch);
//     sampler.record(batch);
//     if (++step % 100 == 0) state.commit();
//   }
//   sampler.set_epoch(epoch + 1);
//
// How: epoch e's order is a permutation of [0, dataset_size) keyed by (seed, e). The processed
// set holds one bit per position. At every State::commit() the samples the ranks recorded since
// the previous commit are merged (one collective, only the words that changed), so every rank
// holds the same committed set. When the partition is made (construction, set_epoch, restore,
// sync, checkpoint load), the positions not in the committed set are split over the world in
// order, rank r taking the r-th run; the runs' lengths differ by at most one.
//
// Not thread-safe. State keeps a reference: keep the sampler alive and in place while tracked.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "cohort/elastic/batches.h"

namespace cohort::elastic {

namespace detail {
class SamplerCore;
struct SamplerAccess;
}  // namespace detail

// The exactly-once sampler for elastic jobs (how it works: the top of sampler.h).
class ElasticSampler {
 public:
  // Samples [0, dataset_size) (1 to 2^48), shuffled by `seed` and the epoch, partitioned over
  // this process's world (rank 0 of 1 before cohort::init()). Starts at epoch 0.
  ElasticSampler(uint64_t dataset_size, uint64_t seed);
  ~ElasticSampler();
  ElasticSampler(const ElasticSampler&) = delete;
  ElasticSampler& operator=(const ElasticSampler&) = delete;

  // The number of samples given to the constructor.
  uint64_t dataset_size() const;
  // The seed given to the constructor.
  uint64_t seed() const;
  // The epoch set last (0 at first).
  uint64_t epoch() const;
  // The world the current partition was made for: this rank, and its size.
  int rank() const;
  // The world size the current partition was made for.
  int world_size() const;

  // Starts `epoch` with nothing processed and repartitions. The current epoch again changes
  // nothing (progress is kept). Local: every rank calls it at the same point.
  void set_epoch(uint64_t epoch);

  // This rank's unprocessed samples, batch_size at a time, in the epoch's order; exactly steps()
  // batches on every rank (the last ones shorter, possibly empty, on ranks with less left).
  // The range is invalid after set_epoch, restore, sync or a checkpoint load; iterating it then
  // throws InvalidArgument. Throws InvalidArgument if the world changed since the partition was
  // made (call State::sync()).
  Batches batches(uint64_t batch_size) const;
  // The number of batches batches(batch_size) yields: the same on every rank, computed from the
  // committed set (ceil of the largest rank's committed remainder / batch_size).
  uint64_t steps(uint64_t batch_size) const;

  // Marks trained samples as processed (uncommitted until the next State::commit()). Each must
  // belong to this rank's partition and not be processed yet; otherwise throws InvalidArgument
  // and records none of them.
  void record(std::span<const uint64_t> samples);

  // Samples of this rank's partition not recorded yet.
  uint64_t remaining() const;
  // Samples of this epoch not in the committed set (the same on every rank).
  uint64_t unprocessed() const;
  // Samples recorded on this rank since the last commit.
  uint64_t uncommitted() const;
  // Whether `sample` is in this epoch's committed set.
  bool is_committed(uint64_t sample) const;

 private:
  friend struct detail::SamplerAccess;
  void check_world() const;
  std::unique_ptr<detail::SamplerCore> core_;
};

}  // namespace cohort::elastic
