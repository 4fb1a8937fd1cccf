// The local ranks that share one segment (ops/shm_segment.h), and how they meet in it: a barrier
// whose waits spin briefly and then sleep on a futex in the segment; every wait is bounded by the
// timeout, and ends at once when any member aborts.
//
// The data area holds two banks, each with one slot per member and one result slot. A collective
// is a sequence of steps, each on the next bank: members write, meet at a barrier, read. Because
// the banks alternate, a step's writes never land where a member may still be reading the step
// before, and one barrier per step is enough.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/spin_policy.h"
#include "ops/shm_segment.h"

namespace cohort::ops {

class ShmGroup {
 public:
  // The segment size for `size` members with slots of `slot_bytes` (a multiple of 4096).
  static size_t segment_bytes(int size, size_t slot_bytes);

  // `names` holds each member's rank in the world, for messages.
  ShmGroup(ShmSegment segment, int rank, std::vector<int> names, size_t slot_bytes,
           std::chrono::milliseconds timeout);

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t slot_bytes() const { return slot_bytes_; }

  class Bank {
   public:
    std::byte* slot(int member) const { return base_ + member * slot_bytes_; }
    // After the members' slots: the slot a reduction writes its result to.
    std::byte* result() const { return base_ + members_ * slot_bytes_; }
    // Every slot of the bank as one area (members + 1 slots), for a step with a single writer.
    std::byte* whole() const { return base_; }
    size_t whole_bytes() const { return (members_ + 1) * slot_bytes_; }

   private:
    friend class ShmGroup;
    Bank(std::byte* base, int members, size_t slot_bytes)
        : base_(base), members_(members), slot_bytes_(slot_bytes) {}
    std::byte* base_;
    int members_;
    size_t slot_bytes_;
  };

  // The bank of the next step.
  Bank next_bank();

  // Returns once every member has arrived here as often as this one. Throws InternalError if a
  // member aborted (naming it and its reason) or on the timeout (naming the members missing).
  // `what` names the collective in the message.
  void barrier(std::string_view what);

  // Thread-safe, also while another thread waits in barrier(): every member's current and later
  // barriers throw InternalError with `reason`. Only the first call of this member counts.
  void abort(const std::string& reason);

 private:
  struct Control;
  bool all_arrived() const;
  void wake_all();
  void throw_if_aborted() const;
  [[noreturn]] void time_out(std::string_view what) const;

  ShmSegment segment_;
  Control* control_;
  int rank_;
  int size_;
  std::vector<int> names_;
  size_t slot_bytes_;
  std::chrono::milliseconds timeout_;
  std::byte* banks_;
  int bank_ = 0;
  uint64_t arrivals_ = 0;   // barriers this member has arrived at
  SpinPolicy spin_policy_;  // whether barrier() spins before it sleeps
  std::atomic<bool> aborted_here_{false};
};

}  // namespace cohort::ops
