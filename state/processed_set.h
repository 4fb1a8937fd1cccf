// The positions of one epoch's permutation that have been processed: one bit per position, plus
// an undo log of the words this rank changed since the last commit. The log is what makes a
// rollback exact and what a commit sends: only the words this rank touched travel.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace cohort::elastic::detail {

class ProcessedSet {
 public:
  explicit ProcessedSet(uint64_t n);

  uint64_t size() const { return n_; }
  uint64_t num_words() const { return words_.size(); }
  std::span<const uint64_t> words() const { return words_; }
  // For receiving a broadcast or a checkpoint: the caller keeps the bits past size() clear and
  // calls recount() and mark_committed() afterwards.
  std::span<uint64_t> mutable_words() { return words_; }
  void recount();

  bool test(uint64_t p) const { return (words_[p / 64] >> (p % 64)) & 1; }
  // Sets a clear bit as an uncommitted change.
  void set(uint64_t p);
  // Clears a bit set by set() since the last commit.
  void unset(uint64_t p);
  // Whether p was set since the last commit.
  bool is_uncommitted(uint64_t p) const;
  uint64_t uncommitted() const { return uncommitted_; }

  // Clear positions in [lo, hi).
  uint64_t zeros(uint64_t lo, uint64_t hi) const;
  // The first clear position in [from, hi), or hi.
  uint64_t next_zero(uint64_t from, uint64_t hi) const;
  // The positions of the clear bits of ranks [k_0, k_1, ...] (ascending, 0-based), n for a rank
  // past the last clear bit.
  std::vector<uint64_t> select_zeros(std::span<const uint64_t> ranks) const;
  // Set positions; kept up to date so that a commit costs what changed, not the whole set.
  uint64_t count() const { return count_; }

  // Drops the changes since the last commit.
  void rollback();
  // Everything set now is committed: forgets the undo log.
  void mark_committed();
  void clear_all();
  // Sets every position, as committed.
  void fill_all();
  // Whether every position is set.
  bool full() const { return count() == n_; }

  // This rank's changes since the last commit: the bits set since then, as whole words starting
  // at word first_word (empty when nothing changed).
  struct Delta {
    uint64_t first_word = 0;
    std::vector<uint64_t> words;
  };
  Delta delta() const;
  // The committed value of word w (the undo log's copy if this rank changed it).
  uint64_t committed_word(uint64_t w) const;
  // ORs other ranks' committed changes into the set (their bits must be clear here).
  void merge_word(uint64_t w, uint64_t bits);

 private:
  void cover(uint64_t w);

  uint64_t n_;
  std::vector<uint64_t> words_;
  // Words [undo_first_, undo_first_ + undo_.size()) as they were at the last commit.
  uint64_t undo_first_ = 0;
  std::vector<uint64_t> undo_;
  uint64_t uncommitted_ = 0;
  uint64_t count_ = 0;
};

// The mask of the valid bits of word w in a set of n positions.
uint64_t valid_bits(uint64_t n, uint64_t w);
// The bits of word w that are positions in [lo, hi).
uint64_t range_mask(uint64_t w, uint64_t lo, uint64_t hi);

}  // namespace cohort::elastic::detail
