// The elastic sampler's state and rules, independent of how bytes move between ranks: the epoch's
// permutation, the processed set, the partition of the unprocessed remainder over the world, and
// the commit merge and sync steps. ElasticSampler wraps it for users; State moves its bytes with
// collectives; tests move them in one process to simulate worlds of any size.
//
// Invariants: every rank holds the same committed set (the processed set minus this rank's
// uncommitted records); each rank records only positions of its own range, so ranks' uncommitted
// records are disjoint; the partition changes only when no rank has uncommitted records.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/wire.h"
#include "state/permutation.h"
#include "state/processed_set.h"

namespace cohort::elastic::detail {

class SamplerCore {
 public:
  SamplerCore(uint64_t dataset_size, uint64_t seed, int rank, int world_size);

  uint64_t dataset_size() const { return set_.size(); }
  uint64_t seed() const { return seed_; }
  uint64_t epoch() const { return epoch_; }
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  // Changes whenever the partition does (set_epoch, rollback, adopt, load).
  uint64_t generation() const { return generation_; }

  // Rank r's positions: the clear bits of [begin(r), end(r)) at the last repartition.
  uint64_t begin(int r) const { return bounds_[static_cast<size_t>(r)]; }
  uint64_t end(int r) const { return bounds_[static_cast<size_t>(r) + 1]; }
  // This rank's first unprocessed position at or after `from`, or end(rank()).
  uint64_t next_unprocessed(uint64_t from) const { return set_.next_zero(from, end(rank_)); }
  uint64_t sample_at(uint64_t position) const { return perm_.at(position); }

  // Samples of this rank's partition not yet recorded.
  uint64_t remaining() const { return set_.zeros(begin(rank_), end(rank_)); }
  // Samples of rank r's partition not in the committed set: the same on every rank.
  uint64_t remaining_committed(int r) const;
  // Batches every rank takes to finish its committed remainder: the same on every rank.
  uint64_t steps(uint64_t batch_size) const;
  // Samples of the epoch not in the committed set: the same on every rank.
  uint64_t unprocessed() const { return set_.size() - (set_.count() - set_.uncommitted()); }
  bool is_committed(uint64_t sample) const;
  uint64_t uncommitted() const { return set_.uncommitted(); }

  // Marks samples of this rank's partition as processed (uncommitted). Throws InvalidArgument,
  // changing nothing, for a sample outside the dataset or the partition, or already processed.
  void record(std::span<const uint64_t> samples);
  // Starts `epoch` with nothing processed; the same epoch again changes nothing.
  void set_epoch(uint64_t epoch);
  // Back to the last commit (epoch and committed set), repartitioned over the same world.
  void rollback();

  // Commit, step 1: this rank's uncommitted records and what the others check them against.
  void write_delta(wire::Writer& out) const;
  // Commit, step 2: reads this sampler's segment from every rank's reader (in rank order) and
  // checks them all. Throws MismatchError, changing nothing, when ranks disagree.
  struct Merge {
    struct Segment {
      int rank;
      ProcessedSet::Delta delta;  // the bits it recorded
    };
    std::vector<Segment> segments;
  };
  Merge check_merge(std::span<wire::Reader> ranks) const;
  // Commit, step 3: every rank's records become committed, on every rank alike.
  void apply_merge(const Merge& merge);

  // Sync: rank 0 writes its header; every rank's bitmap receives rank 0's words; then every rank
  // adopts them as committed and repartitions over its world.
  void write_sync_header(wire::Writer& out) const;
  std::span<uint64_t> bitmap_words() { return set_.mutable_words(); }
  // Reads a header, checks the received bitmap, adopts. Throws MismatchError on bad input.
  void adopt(wire::Reader& header, int rank, int world_size);

  // Checkpoint: the committed state (epoch and committed set), written and loaded.
  struct Image {
    uint64_t seed = 0;
    uint64_t epoch = 0;
    std::vector<uint64_t> words;
  };
  void write_committed_header(wire::Writer& out) const;
  // Calls `emit` with the committed words, a chunk at a time.
  void write_committed_words(const std::function<void(std::span<const uint64_t>)>& emit) const;
  // Reads an image written above; throws wire::MalformedBytes if it does not fit this sampler.
  Image read_image(wire::Reader& in) const;
  // The committed state as an image (kept as the previous generation while a commit's sharded
  // replicas travel, and loaded back if they are lost).
  Image committed_image() const;
  void load(Image image);

 private:
  void repartition(int rank, int world_size);
  uint64_t fingerprint() const;
  int owner(uint64_t position) const;
  std::string bad_record(uint64_t sample, uint64_t position) const;
  void check_segment_header(wire::Reader& in, int sender, uint64_t committed) const;

  uint64_t seed_;
  uint64_t epoch_ = 0;
  Permutation perm_;
  ProcessedSet set_;
  int rank_ = 0;
  int world_size_ = 1;
  std::vector<uint64_t> bounds_;
  uint64_t generation_ = 0;
  // Set between set_epoch() and the next commit: the last committed epoch, to roll back to.
  // Its set is kept only when it was incomplete.
  struct Previous {
    uint64_t epoch;
    std::optional<ProcessedSet> set;
  };
  std::optional<Previous> previous_;
};

}  // namespace cohort::elastic::detail
