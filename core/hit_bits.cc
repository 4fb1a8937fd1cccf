#include "core/hit_bits.h"

#include <algorithm>
#include <bit>

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
  if (slots > counts_.size()) counts_.resize(slots, 0);
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

bool HitBits::set_all(std::span<const int> ranks, size_t first, size_t n) {
  size_t end_word = (first + n + 63) / 64;
  for (int rank : ranks) {
    const uint64_t* row_words = rows_.data() + row(rank);
    for (size_t w = first / 64; w < end_word; ++w) {
      if (row_words[w] & mask(w, first, n)) return false;
    }
  }
  for (int rank : ranks) {
    uint64_t* row_words = rows_.data() + row(rank);
    for (size_t w = first / 64; w < end_word; ++w) row_words[w] |= mask(w, first, n);
  }
  int k = static_cast<int>(ranks.size());
  for (size_t s = first; s < first + n; ++s) counts_[s] += k;
  return true;
}

void HitBits::clear(const std::vector<size_t>& slots) {
  if (slots.empty()) return;
  std::vector<uint64_t> keep(stride_, ~uint64_t{0});
  for (size_t slot : slots) {
    keep[slot / 64] &= ~(uint64_t{1} << (slot % 64));
    counts_[slot] = 0;
  }
  for (size_t i = 0; i < rows_.size(); ++i) rows_[i] &= keep[i % stride_];
}

}  // namespace cohort
