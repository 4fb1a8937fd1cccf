// A buffer too large for every rank to hold whole (an optimizer's state, ZeRO-style): `length`
// elements split over the ranks, each rank holding one contiguous range. Tracked in a State,
// commit() snapshots each rank's range and copies it to COHORT_STATE_REPLICAS other ranks (on
// other hosts where the world has them) while the next step runs, and sync() after a change of
// world gives every rank its new range, fetched from whichever rank holds those bytes: no rank
// ever holds the whole buffer.
//
//   cohort::elastic::ShardedBuffer<float> moments(n_params);   // after init(): this rank's range
//   state.track("adam.m", moments);
//   for (uint64_t i = moments.range().begin; i < moments.range().end; ++i)
//     moments.local()[i - moments.range().begin] = ...;
//
// Which rank holds what depends only on the length and the world size (shard_range), so every
// rank knows every other rank's range without asking. See docs/state.md, "Sharded values".
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cohort/cohort.h"
#include "cohort/elastic/elements.h"
#include "cohort/errors.h"
#include "cohort/types.h"

namespace cohort::elastic {

// Elements [begin, end) of a sharded buffer.
struct ShardRange {
  uint64_t begin = 0;  // the first element
  uint64_t end = 0;    // one past the last element
  // The number of elements.
  uint64_t size() const { return end - begin; }
  // Both ends equal.
  bool operator==(const ShardRange&) const = default;
};

// Rank `rank`'s range of `length` elements in a world of `size`: contiguous, in rank order, the
// first length % size ranks holding one element more than the others.
ShardRange shard_range(uint64_t length, int rank, int size);

namespace detail {
// How State reaches a ShardedBuffer without knowing its element type.
class ShardStorage {
 public:
  virtual ~ShardStorage() = default;
  virtual DataType dtype() const = 0;
  virtual uint64_t length() const = 0;
  virtual ShardRange range() const = 0;
  // This rank's elements, as bytes.
  virtual std::span<std::byte> bytes() = 0;
  // Makes this rank hold `range` (the elements' values are then the caller's to write).
  virtual void assign(ShardRange range) = 0;
};
}  // namespace detail

// A sharded buffer of T (how to use it: the top of this file). The State that tracks it resizes
// and refills this rank's elements when a sync reshards; between syncs the range stays put.
template <detail::BufferElement T>
requires(!std::same_as<T, bool>) class ShardedBuffer : public detail::ShardStorage {
 public:
  // This rank's range of `length` elements in the current world, each set to `value`. Call it
  // after cohort::init(). InvalidArgument if `length` is 0.
  explicit ShardedBuffer(uint64_t length, T value = T{})
      : length_(length), range_(shard_range(length, cohort::rank(), cohort::size())) {
    if (length == 0) throw InvalidArgument("ShardedBuffer: a sharded buffer needs elements");
    values_.assign(range_.size(), value);
  }

  // The elements' type.
  DataType dtype() const override { return data_type_of<T>(); }
  // The whole buffer's number of elements, over every rank.
  uint64_t length() const override { return length_; }
  // What this rank holds; it changes when a sync() after a change of world reshards.
  ShardRange range() const override { return range_; }
  // This rank's elements: local()[i] is element range().begin + i of the whole buffer.
  std::span<T> local() { return values_; }
  // The same, read-only.
  std::span<const T> local() const { return values_; }
  // This rank's elements as bytes (for State).
  std::span<std::byte> bytes() override { return std::as_writable_bytes(std::span(values_)); }
  // Resizes this rank's elements to `range` (State's reshard, which then writes them).
  void assign(ShardRange range) override {
    values_.resize(range.size());
    range_ = range;
  }

 private:
  uint64_t length_;
  ShardRange range_;
  std::vector<T> values_;
};

}  // namespace cohort::elastic
