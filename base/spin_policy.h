// Whether a wait should spin before it sleeps, learned from how its recent spins ended. Spinning
// pays only while the thread being waited for runs on another core: then the answer comes within
// microseconds and a sleep would add a wake-up. When the machine has fewer free cores than
// spinning threads (more ranks than cores, other jobs, a compile), a spin takes the core from the
// very thread that would answer, and each wait burns its whole spin and then sleeps anyway.
// So a waiter that keeps missing stops spinning for a while and then tries again, backing off
// longer each time it misses; one hit restores spinning. The control channel's rings and the
// shared-memory barrier both wait through it. Owned by one waiting thread: not thread-safe.
#pragma once

#include <algorithm>

namespace cohort {

class SpinPolicy {
 public:
  // Whether the next wait should spin first.
  bool should_spin() {
    if (skip_ == 0) return true;
    --skip_;
    return false;
  }

  // After a wait that spun: whether what it waited for came during the spin.
  void spun(bool arrived) {
    if (arrived) {
      misses_ = 0;
      backoff_ = kFirstBackoff;
      return;
    }
    if (++misses_ < kMissesBeforeBackoff) return;
    // After the pause one more miss is enough to pause again, for twice as long.
    misses_ = kMissesBeforeBackoff - 1;
    skip_ = backoff_;
    backoff_ = std::min(backoff_ * 2, kLongestBackoff);
  }

 private:
  // Consecutive misses that stop spinning, and how many waits then sleep at once: the first time,
  // and at most after repeated misses.
  static constexpr int kMissesBeforeBackoff = 4;
  static constexpr int kFirstBackoff = 16;
  static constexpr int kLongestBackoff = 1024;

  int misses_ = 0;  // consecutive spins that ended in a sleep
  int skip_ = 0;    // waits left that sleep without spinning
  int backoff_ = kFirstBackoff;
};

}  // namespace cohort
