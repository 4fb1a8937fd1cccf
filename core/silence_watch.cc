#include "core/silence_watch.h"

#include <algorithm>

namespace cohort {

SilenceWatch::SilenceWatch(int size, const std::vector<int>& ranks, Clock::time_point now)
    : prev_(size, -1), next_(size, -1), last_heard_(size, now), heard_(size, 0), watched_(size, 0) {
  for (int rank : ranks) {
    if (watches(rank) || rank < 0 || rank >= size) continue;
    watched_[rank] = 1;
    push_back(rank);
  }
}

bool SilenceWatch::watches(int rank) const {
  return rank >= 0 && static_cast<size_t>(rank) < watched_.size() && watched_[rank] != 0;
}

void SilenceWatch::heard(int rank, Clock::time_point now) {
  if (!watches(rank)) return;
  if (tail_ >= 0) now = std::max(now, last_heard_[tail_]);
  unlink(rank);
  last_heard_[rank] = now;
  heard_[rank] = 1;
  push_back(rank);
}

void SilenceWatch::forget(int rank) {
  if (!watches(rank)) return;
  unlink(rank);
  watched_[rank] = 0;
}

std::optional<SilenceWatch::Entry> SilenceWatch::oldest() const {
  if (head_ < 0) return std::nullopt;
  return Entry{head_, last_heard_[head_], heard_[head_] != 0};
}

void SilenceWatch::unlink(int rank) {
  int before = prev_[rank], after = next_[rank];
  (before >= 0 ? next_[before] : head_) = after;
  (after >= 0 ? prev_[after] : tail_) = before;
  prev_[rank] = next_[rank] = -1;
  --count_;
}

void SilenceWatch::push_back(int rank) {
  prev_[rank] = tail_;
  next_[rank] = -1;
  (tail_ >= 0 ? next_[tail_] : head_) = rank;
  tail_ = rank;
  ++count_;
}

}  // namespace cohort
