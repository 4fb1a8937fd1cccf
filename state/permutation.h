// A keyed pseudo-random permutation of [0, n), computed one element at a time in both directions
// without a table: position -> sample and sample -> position. Both samplers shuffle with it, so a
// dataset of any size costs no memory to shuffle, and every host computes the same order whatever
// its standard library (std::shuffle and the std distributions are not portable).
#pragma once

#include <array>
#include <cstdint>

namespace cohort::elastic::detail {

// splitmix64's finalizer: a bijective 64-bit mixer with full avalanche.
uint64_t mix64(uint64_t x);

class Permutation {
 public:
  // The permutation of [0, n) keyed by (seed, epoch); shuffle = false gives the identity.
  // Requires 1 <= n <= kMaxSize.
  Permutation(uint64_t n, uint64_t seed, uint64_t epoch, bool shuffle = true);

  static constexpr uint64_t kMaxSize = uint64_t{1} << 48;

  uint64_t size() const { return n_; }
  // The sample at `position`; position < size().
  uint64_t at(uint64_t position) const;
  // The position of `sample`; sample < size(). position_of(at(p)) == p.
  uint64_t position_of(uint64_t sample) const;

 private:
  static constexpr int kRounds = 4;
  uint64_t encrypt(uint64_t x) const;
  uint64_t decrypt(uint64_t x) const;

  uint64_t n_;
  bool shuffle_;
  int half_bits_ = 1;
  uint64_t half_mask_ = 1;
  std::array<uint64_t, kRounds> keys_{};
};

}  // namespace cohort::elastic::detail
