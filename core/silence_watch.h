// The heartbeat's deadline bookkeeping (core/heartbeat.h): the watched ranks in the order they
// were last heard from. Rank 0 watches every rank, so what a beat and a check cost must not grow
// with N: a beat moves its rank to the back of the order, and the rank silent longest, whose
// deadline is the next one, is at the front, both in O(1). Beats are heard at "now" on a steady
// clock, never earlier than the one before, so the order of hearing is the order of the deadlines:
// a list threaded through arrays indexed by rank does a min-heap's work without its log N.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <vector>

namespace cohort {

class SilenceWatch {
 public:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    int rank;
    Clock::time_point last_heard;  // or when watching began
    bool heard;                    // a beat has come since watching began
  };

  // Watches `ranks` (each in [0, size), none twice) from `now`, when watching began.
  SilenceWatch(int size, const std::vector<int>& ranks, Clock::time_point now);

  bool watches(int rank) const;
  size_t size() const { return count_; }
  // A beat from `rank` at `now`: it goes to the back. Nothing for a rank not watched. A `now`
  // earlier than the last beat's counts as the last beat's time, so the order stays the deadlines'.
  void heard(int rank, Clock::time_point now);
  // Stops watching `rank` (it said goodbye). Nothing for a rank not watched.
  void forget(int rank);
  // The rank heard from longest ago; nullopt when none is watched.
  std::optional<Entry> oldest() const;

  // Calls f(rank) for every watched rank, longest silent first; f must not change the watch.
  template <typename F>
  void for_each(F&& f) const {
    for (int r = head_; r >= 0; r = next_[r]) f(r);
  }

 private:
  void unlink(int rank);
  void push_back(int rank);

  std::vector<int> prev_, next_;  // the order's links, -1 at its ends
  std::vector<Clock::time_point> last_heard_;
  std::vector<char> heard_;
  std::vector<char> watched_;
  int head_ = -1, tail_ = -1;
  size_t count_ = 0;
};

}  // namespace cohort
