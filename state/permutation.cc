#include "state/permutation.h"

#include <bit>
#include <string>

#include "cohort/errors.h"

namespace cohort::elastic::detail {

uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

Permutation::Permutation(uint64_t n, uint64_t seed, uint64_t epoch, bool shuffle)
    : n_(n), shuffle_(shuffle) {
  if (n == 0 || n > kMaxSize) {
    throw InvalidArgument("a dataset needs between 1 and 2^48 samples, not " + std::to_string(n));
  }
  // A balanced Feistel network on 2 * half_bits_ bits covers [0, n) with a domain below 4n, so
  // cycle-walking (re-applying until the value falls inside [0, n)) takes under 4 steps on average.
  int bits = std::bit_width(n - 1);
  half_bits_ = bits <= 2 ? 1 : (bits + 1) / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  uint64_t key = mix64(mix64(seed ^ 0x636f686f72742e73ULL) + epoch * 0x9e3779b97f4a7c15ULL);
  for (int i = 0; i < kRounds; ++i) keys_[i] = mix64(key + static_cast<uint64_t>(i + 1));
}

uint64_t Permutation::encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_, right = x & half_mask_;
  for (uint64_t k : keys_) {
    uint64_t next = left ^ (mix64(right ^ k) & half_mask_);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

uint64_t Permutation::decrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_, right = x & half_mask_;
  for (int i = kRounds - 1; i >= 0; --i) {
    uint64_t prev = right ^ (mix64(left ^ keys_[i]) & half_mask_);
    right = left;
    left = prev;
  }
  return (left << half_bits_) | right;
}

uint64_t Permutation::at(uint64_t position) const {
  if (!shuffle_) return position;
  uint64_t x = position;
  do x = encrypt(x);
  while (x >= n_);
  return x;
}

uint64_t Permutation::position_of(uint64_t sample) const {
  if (!shuffle_) return sample;
  uint64_t x = sample;
  do x = decrypt(x);
  while (x >= n_);
  return x;
}

}  // namespace cohort::elastic::detail
