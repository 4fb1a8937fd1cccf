#include "state/processed_set.h"

#include <algorithm>
#include <bit>

namespace cohort::elastic::detail {

uint64_t valid_bits(uint64_t n, uint64_t w) {
  uint64_t first = w * 64;
  if (first + 64 <= n) return ~uint64_t{0};
  return first >= n ? 0 : (uint64_t{1} << (n - first)) - 1;
}

uint64_t range_mask(uint64_t w, uint64_t lo, uint64_t hi) {
  uint64_t first = std::max(lo, w * 64), last = std::min(hi, w * 64 + 64);
  if (first >= last) return 0;
  uint64_t width = last - first;
  uint64_t bits = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  return bits << (first - w * 64);
}

namespace {

// Bits [lo, hi) of a word, 0 <= lo <= hi <= 64.
uint64_t bit_range(uint64_t lo, uint64_t hi) {
  uint64_t upper = hi == 64 ? ~uint64_t{0} : (uint64_t{1} << hi) - 1;
  return upper & ~((uint64_t{1} << lo) - 1);
}

// The position (0-63) of the k-th set bit of x; x has more than k set bits.
int select_in_word(uint64_t x, uint64_t k) {
  for (; k > 0; --k) x &= x - 1;
  return std::countr_zero(x);
}

}  // namespace

ProcessedSet::ProcessedSet(uint64_t n) : n_(n), words_((n + 63) / 64, 0) {}

void ProcessedSet::cover(uint64_t w) {
  if (undo_.empty()) {
    undo_first_ = w;
    undo_.push_back(words_[w]);
    return;
  }
  uint64_t end = undo_first_ + undo_.size();
  if (w >= undo_first_ && w < end) return;
  // Grow by at least the current length so that records in any order cost O(1) amortized.
  uint64_t grow = std::max<uint64_t>(undo_.size(), 8);
  uint64_t first = undo_first_, last = end;
  if (w < undo_first_) first = std::min(w, undo_first_ > grow ? undo_first_ - grow : 0);
  if (w >= end) last = std::max(w + 1, std::min<uint64_t>(end + grow, words_.size()));
  // Words outside the log have not changed since the commit: their current value is the original.
  std::vector<uint64_t> log(words_.begin() + static_cast<ptrdiff_t>(first),
                            words_.begin() + static_cast<ptrdiff_t>(last));
  std::copy(undo_.begin(), undo_.end(), log.begin() + static_cast<ptrdiff_t>(undo_first_ - first));
  undo_first_ = first;
  undo_ = std::move(log);
}

void ProcessedSet::set(uint64_t p) {
  cover(p / 64);
  words_[p / 64] |= uint64_t{1} << (p % 64);
  ++uncommitted_;
  ++count_;
}

void ProcessedSet::unset(uint64_t p) {
  words_[p / 64] &= ~(uint64_t{1} << (p % 64));
  --uncommitted_;
  --count_;
}

uint64_t ProcessedSet::committed_word(uint64_t w) const {
  if (w >= undo_first_ && w < undo_first_ + undo_.size()) return undo_[w - undo_first_];
  return words_[w];
}

bool ProcessedSet::is_uncommitted(uint64_t p) const {
  uint64_t w = p / 64, bit = uint64_t{1} << (p % 64);
  return (words_[w] & bit) && !(committed_word(w) & bit);
}

uint64_t ProcessedSet::zeros(uint64_t lo, uint64_t hi) const {
  if (lo >= hi) return 0;
  uint64_t ones = 0;
  uint64_t first = lo / 64, last = (hi - 1) / 64;
  for (uint64_t w = first; w <= last; ++w) {
    uint64_t mask = bit_range(w == first ? lo % 64 : 0, w == last ? (hi - 1) % 64 + 1 : 64);
    ones += static_cast<uint64_t>(std::popcount(words_[w] & mask));
  }
  return (hi - lo) - ones;
}

uint64_t ProcessedSet::next_zero(uint64_t from, uint64_t hi) const {
  hi = std::min(hi, n_);
  while (from < hi) {
    uint64_t free = ~words_[from / 64] & ~((uint64_t{1} << (from % 64)) - 1);
    if (free != 0) return std::min(hi, from / 64 * 64 + std::countr_zero(free));
    from = (from / 64 + 1) * 64;
  }
  return hi;
}

std::vector<uint64_t> ProcessedSet::select_zeros(std::span<const uint64_t> ranks) const {
  std::vector<uint64_t> out;
  out.reserve(ranks.size());
  uint64_t w = 0, before = 0;  // clear bits in words [0, w)
  for (uint64_t k : ranks) {
    for (; w < words_.size(); ++w) {
      uint64_t free = ~words_[w] & valid_bits(n_, w);
      auto here = static_cast<uint64_t>(std::popcount(free));
      if (k < before + here) {
        out.push_back(w * 64 + select_in_word(free, k - before));
        break;
      }
      before += here;
    }
    if (w == words_.size()) out.push_back(n_);
  }
  return out;
}

void ProcessedSet::recount() {
  count_ = 0;
  for (uint64_t word : words_) count_ += static_cast<uint64_t>(std::popcount(word));
}

void ProcessedSet::merge_word(uint64_t w, uint64_t bits) {
  words_[w] |= bits;
  count_ += static_cast<uint64_t>(std::popcount(bits));
}

void ProcessedSet::rollback() {
  std::copy(undo_.begin(), undo_.end(), words_.begin() + static_cast<ptrdiff_t>(undo_first_));
  count_ -= uncommitted_;
  mark_committed();
}

void ProcessedSet::mark_committed() {
  undo_.clear();
  undo_first_ = 0;
  uncommitted_ = 0;
}

void ProcessedSet::clear_all() {
  std::fill(words_.begin(), words_.end(), 0);
  count_ = 0;
  mark_committed();
}

void ProcessedSet::fill_all() {
  for (uint64_t w = 0; w < words_.size(); ++w) words_[w] = valid_bits(n_, w);
  count_ = n_;
  mark_committed();
}

ProcessedSet::Delta ProcessedSet::delta() const {
  size_t first = 0, last = undo_.size();
  auto changed = [&](size_t i) { return words_[undo_first_ + i] ^ undo_[i]; };
  while (first < last && changed(first) == 0) ++first;
  while (last > first && changed(last - 1) == 0) --last;
  Delta d;
  d.first_word = undo_first_ + first;
  for (size_t i = first; i < last; ++i) d.words.push_back(changed(i));
  return d;
}

}  // namespace cohort::elastic::detail
