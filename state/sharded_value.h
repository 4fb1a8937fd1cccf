// One sharded value's copies on this rank: its own range and the ranges it keeps for others, each
// as of the commit it was taken at, plus the replicas of a commit still in flight. commit()
// starts, settles and confirms them (state/shard_sync.cc), sync() reshards from them, and a
// checkpoint saves the own copy and loads a new range (state/checkpoint_shards.cc).
//
// A commit's own copy and its replicas form a generation; until every rank has settled the
// newest one, the one before stays too (two own copies, committed and pending replicas), so a
// failure while replicas travel can go back to the commit before.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cohort/elastic/sharded.h"
#include "cohort/handle.h"
#include "state/shard_plan.h"
#include "state/shard_world.h"

namespace cohort::elastic::detail {

// What a rank holds of a sharded value: elements [range) as of commit `epoch`.
struct HeldCopy {
  uint64_t epoch = 0;
  ShardRange range;
};
// The epoch that stands for the live values, before any rank has committed.
inline constexpr uint64_t kLiveEpoch = ~uint64_t{0};

class ShardedValue {
 public:
  ShardedValue(std::string name, ShardStorage& storage);
  ShardedValue(ShardedValue&&) noexcept = default;
  ShardedValue& operator=(ShardedValue&&) noexcept = default;
  // Waits for a transfer still in flight (it reads this object's memory), touching nothing else.
  ~ShardedValue();

  const std::string& name() const { return name_; }
  DataType dtype() const { return storage_->dtype(); }
  uint64_t length() const { return storage_->length(); }
  ShardRange range() const { return storage_->range(); }

  // Commit, first half: this rank's live range becomes its own copy of commit `epoch` (the copy
  // before stays until confirm()).
  void take_own_copy(uint64_t epoch);
  // Commit, second half: that copy starts on its way to its replica holders, as the ranges this
  // rank keeps start to arrive: one alltoall named `collective`, not waited for. (Every value's
  // copy is taken before any transfer starts, so no copy competes with one.)
  void start_replicas(const std::string& collective, const ShardWorld& world);
  // Waits for the transfer start_replicas() began; the replicas that arrived become the pending
  // ones of its commit. A failed transfer throws its error, or with `quiet` leaves no pending
  // replicas (a sync after a failure plans without them).
  void settle(bool quiet);
  // Once every rank has settled: the pending replicas become the committed ones and the own copy
  // before them is dropped (its memory kept for the next commit with `keep_spare`).
  void confirm(bool keep_spare);
  // Local: the live range back to this rank's own copy of commit `epoch`, if it has one of the
  // live range.
  void restore(uint64_t epoch);
  // This rank's own copy of commit `epoch`, if it has one: its range and bytes.
  std::optional<std::pair<ShardRange, std::span<const std::byte>>> own_copy(uint64_t epoch) const;
  // Makes `bytes` (elements [range) of this value) this rank's live range (a checkpoint load).
  void load(ShardRange range, std::span<const std::byte> bytes);
  // Every complete copy this rank holds, the live range included (as kLiveEpoch).
  std::vector<HeldCopy> held() const;
  // Sync, in the current world of `size` ranks: makes this rank's live range its new one, filled
  // by the plan's transfers from the copies of commit `epoch` (one alltoall named `collective`,
  // left out on every rank alike when nothing travels). Returns the bytes received.
  uint64_t reshard(const std::string& collective, const ReshardPlan& plan, uint64_t epoch, int rank,
                   int size);

 private:
  struct OwnCopy {
    bool valid = false;
    uint64_t epoch = 0;
    ShardRange range;
    std::vector<std::byte> bytes;
  };
  // Replicas of other ranks' ranges, all of commit `epoch`, in the output of `transfer`.
  struct Copies {
    uint64_t epoch = 0;
    bool complete = false;
    std::optional<Handle> transfer;                     // its output holds the ranges back to back
    std::vector<std::pair<ShardRange, size_t>> ranges;  // each with its offset into that output
    std::span<const std::byte> bytes() const;
  };
  // A transfer start_replicas() began: what it reads stays here until settle().
  struct InFlight {
    Handle handle;
    std::vector<std::byte> repeated;  // the own copy once per holder, when there are several
    std::vector<int> owners;          // whose ranges arrive, in rank order
    int size = 0;
  };
  // The bytes of elements [range) of commit `epoch` that this rank holds; empty if it does not.
  std::span<const std::byte> find(uint64_t epoch, ShardRange range) const;
  void accept(const InFlight& done);
  std::span<std::byte> live() const { return storage_->bytes(); }
  size_t element() const { return element_size(dtype()); }

  std::string name_;
  ShardStorage* storage_;
  OwnCopy own_, previous_own_;
  Copies committed_, pending_;
  std::unique_ptr<InFlight> in_flight_;
};

}  // namespace cohort::elastic::detail
