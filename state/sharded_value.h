// One sharded value's copies on this rank: its own range and the ranges it keeps for others, each
// as of the commit it was taken at, plus the replicas of a commit still in flight. commit()
// sends and promotes them (state/shard_sync.cc), sync() reshards from them, and a checkpoint
// saves the own copy and loads a new range (state/checkpoint_shards.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cohort/elastic/sharded.h"
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

  const std::string& name() const { return name_; }
  DataType dtype() const { return storage_->dtype(); }
  uint64_t length() const { return storage_->length(); }
  ShardRange range() const { return storage_->range(); }

  // Commit, first half: this rank's live range goes to its replica holders and the ranges it
  // keeps arrive, as the pending replicas of commit `epoch` (one alltoall named `collective`).
  void send_replicas(const std::string& collective, const ShardWorld& world, uint64_t epoch);
  // Commit, second half, once every rank has its pending replicas: they and this rank's own
  // range become the committed copies.
  void promote();
  // Local: the live range back to this rank's committed copy, if the range is still the same.
  void restore();
  // This rank's own committed copy, if it is of commit `epoch`: its range and bytes.
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
  struct Copies {
    uint64_t epoch = 0;
    bool complete = false;
    OwnedTensor bytes;                                  // the ranges, back to back
    std::vector<std::pair<ShardRange, size_t>> ranges;  // each with its offset into bytes
  };
  // The bytes of elements [range) of commit `epoch` that this rank holds; empty if it does not.
  std::span<const std::byte> find(uint64_t epoch, ShardRange range) const;
  std::span<std::byte> live() const { return storage_->bytes(); }
  size_t element() const { return element_size(dtype()); }

  std::string name_;
  ShardStorage* storage_;
  bool has_own_ = false;
  uint64_t own_epoch_ = 0;
  ShardRange own_range_;
  std::vector<std::byte> own_;
  Copies committed_, pending_;
};

}  // namespace cohort::elastic::detail
