// Rank 0's table of cache hits (core/negotiator_hits.cc): for each slot (a cached id with
// submissions in flight) a bit per rank and their count. Rows are ranks, so that one rank's run
// of hits on consecutive slots is a few word operations, and the counts sit side by side. Several
// ranks' run (a host leader's envelope) is counted in O(1) whatever its length: it adds to a
// difference array (the run's first slot +k, the slot after its last -k), resolved into the
// counts when they are next read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cohort {

class HitBits {
 public:
  explicit HitBits(int ranks) : ranks_(ranks) {}

  // Makes room for slots [0, slots), keeping every bit.
  void reserve(size_t slots);
  size_t slots() const { return counts_.size(); }

  bool has(size_t slot, int rank) const {
    return (rows_[row(rank) + slot / 64] >> (slot % 64)) & 1;
  }
  int count(size_t slot) const {
    if (dirty_hi_ > dirty_lo_) settle();
    return counts_[slot];
  }
  // Sets `rank`'s bits of slots [first, first + n) and counts them; if any was set already,
  // sets nothing and returns the first such slot's offset from `first`, else n.
  size_t set(int rank, size_t first, size_t n);
  // The same for several ranks that hit the same slots (a host leader's envelope): each slot is
  // counted once for all of them. Sets nothing and returns false if any of their bits was set
  // already (set() rank by rank then says which).
  bool set_all(std::span<const int> ranks, size_t first, size_t n);
  // Clears every rank's bits of `slots`: one pass over the rows.
  void clear(const std::vector<size_t>& slots);

 private:
  size_t row(int rank) const { return static_cast<size_t>(rank) * stride_; }
  // Sets masks_ to the bits of slots [first, first + n) in each word they touch, from first's.
  void make_masks(size_t first, size_t n);
  // Adds the difference array into the counts (and zeroes it).
  void settle() const;

  int ranks_;
  size_t stride_ = 0;  // words per rank
  std::vector<uint64_t> rows_;
  std::vector<uint64_t> masks_;  // make_masks()'s, reused
  // count(s) is counts_[s] plus the sum of diff_[0..s]: only diff_[dirty_lo_, dirty_hi_) is not 0.
  mutable std::vector<int> counts_;
  mutable std::vector<int> diff_;  // one longer than counts_
  mutable size_t dirty_lo_ = 0, dirty_hi_ = 0;
};

}  // namespace cohort
