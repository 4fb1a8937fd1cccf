#include "core/hit_bits.h"

#include <algorithm>
#include <bit>
#include <utility>

namespace cohort {
namespace {

// The bits of slots [first, first + n) that fall in word `w`.
uint64_t mask(size_t w, size_t first, size_t n) {
  size_t lo = std::max(first, w * 64), hi = std::min(first + n, w * 64 + 64);
  if (lo >= hi) return 0;
  uint64_t bits = hi - lo == 64 ? ~uint64_t{0} : ((uint64_t{1} << (hi - lo)) - 1);
  return bits << (lo % 64);
}

}  // namespace

void HitBits::reserve(size_t slots) {
  if (slots > counts_.size()) {
    counts_.resize(slots, 0);
    diff_.resize(slots + 1, 0);
  }
  size_t stride = (slots + 63) / 64;
  if (stride <= stride_) return;
  stride = std::max(stride, 2 * stride_);
  std::vector<uint64_t> rows(static_cast<size_t>(ranks_) * stride, 0);
  for (size_t r = 0; r < static_cast<size_t>(ranks_); ++r) {
    std::copy_n(rows_.begin() + static_cast<ptrdiff_t>(r * stride_), stride_,
                rows.begin() + static_cast<ptrdiff_t>(r * stride));
  }
  rows_ = std::move(rows);
  stride_ = stride;
}

size_t HitBits::set(int rank, size_t first, size_t n) {
  uint64_t* row_words = rows_.data() + row(rank);
  size_t end_word = (first + n + 63) / 64;
  for (size_t w = first / 64; w < end_word; ++w) {
    if (uint64_t twice = row_words[w] & mask(w, first, n)) {
      return w * 64 + static_cast<size_t>(std::countr_zero(twice)) - first;
    }
  }
  for (size_t w = first / 64; w < end_word; ++w) row_words[w] |= mask(w, first, n);
  for (size_t s = first; s < first + n; ++s) ++counts_[s];
  return n;
}

void HitBits::make_masks(size_t first, size_t n) {
  size_t w0 = first / 64, end_word = (first + n + 63) / 64;
  masks_.resize(end_word - w0);
  for (size_t w = w0; w < end_word; ++w) masks_[w - w0] = mask(w, first, n);
}

bool HitBits::set_all(std::span<const int> ranks, size_t first, size_t n) {
  if (n == 0) return true;
  make_masks(first, n);
  size_t w0 = first / 64;
  for (int rank : ranks) {
    const uint64_t* row_words = rows_.data() + row(rank) + w0;
    uint64_t twice = 0;
    for (size_t i = 0; i < masks_.size(); ++i) twice |= row_words[i] & masks_[i];
    if (twice) return false;
  }
  for (int rank : ranks) {
    uint64_t* row_words = rows_.data() + row(rank) + w0;
    for (size_t i = 0; i < masks_.size(); ++i) row_words[i] |= masks_[i];
  }
  int k = static_cast<int>(ranks.size());
  diff_[first] += k;
  diff_[first + n] -= k;
  if (dirty_hi_ == dirty_lo_) dirty_lo_ = first, dirty_hi_ = first + n;
  dirty_lo_ = std::min(dirty_lo_, first);
  dirty_hi_ = std::max(dirty_hi_, first + n);
  return true;
}

void HitBits::settle() const {
  int run = 0;
  for (size_t s = dirty_lo_; s < dirty_hi_; ++s) {
    run += std::exchange(diff_[s], 0);
    counts_[s] += run;
  }
  diff_[dirty_hi_] = 0;  // the last run's end: what it took away, the sum above added back
  dirty_lo_ = dirty_hi_ = 0;
}

void HitBits::clear(const std::vector<size_t>& slots) {
  if (slots.empty()) return;
  if (dirty_hi_ > dirty_lo_) settle();
  std::vector<uint64_t> keep(stride_, ~uint64_t{0});
  for (size_t slot : slots) {
    keep[slot / 64] &= ~(uint64_t{1} << (slot % 64));
    counts_[slot] = 0;
  }
  // Row by row, not word by word with a modulo: a division per word cost more than the words.
  for (size_t r = 0; r < static_cast<size_t>(ranks_); ++r) {
    uint64_t* row_words = rows_.data() + r * stride_;
    for (size_t w = 0; w < stride_; ++w) row_words[w] &= keep[w];
  }
}

}  // namespace cohort
