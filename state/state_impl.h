// What a State holds, and the operations on it shared by state.cc, commit.cc, sync.cc and the
// checkpoint code.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/wire.h"
#include "cohort/elastic/state.h"
#include "state/sampler_core.h"
#include "state/shard_world.h"
#include "state/sharded_value.h"
#include "state/values.h"

namespace cohort::elastic::detail {

struct Entry {
  std::string name;
  ValueKind kind;
  size_t index;  // into StateImpl::buffers, objects, samplers or sharded
};

struct StateImpl {
  std::string label;
  std::vector<Entry> entries;  // in tracking order
  std::vector<BufferValue> buffers;
  std::vector<ObjectValue> objects;
  std::vector<ElasticSampler*> samplers;
  std::vector<ShardedValue> sharded;
  ShardWorldCache shard_world;  // the sharded values' world, gathered once per runtime
  uint64_t commit_count = 0;
  bool has_commit = false;
  // The generation before the last commit, while that commit's sharded replicas may still travel
  // (state/shard_sync.h, overlaps()); the buffers and objects keep their own.
  struct Previous {
    uint64_t commit_count = 0;
    std::vector<SamplerCore::Image> samplers;
  };
  std::optional<Previous> previous;
  uint64_t reshard_bytes = 0;  // received by the last sync's reshard
  // Every value is its last commit, put back by restore() (the next sync may keep the values of
  // ValueScope kSameOnEveryRank); a commit, a sync and a newly tracked value clear it.
  bool restored = false;
  std::vector<std::string> kept_by_last_sync;  // State::last_sync_kept()
  std::function<void()> commit_hook;
  std::vector<std::function<void()>> reset_callbacks;

  // The name of a collective this State submits.
  std::string collective(std::string_view what) const;
  SamplerCore& sampler(size_t index) const;
  // What every rank must agree on: each entry's name, kind, type and size, in order.
  wire::Writer manifest() const;
};

// Explains how `theirs` (from `who`) differs from this State's manifest; empty if it does not.
std::string manifest_difference(const StateImpl& state, std::span<const std::byte> theirs,
                                std::string_view who);

void commit_state(StateImpl& state);
void restore_state(StateImpl& state);
// Local: every value back to the previous generation (a sync's root, when the last commit's
// sharded replicas were lost); nothing changes unless every object's bytes parse.
void step_back_state(StateImpl& state);
// discard_uncommitted: drop samplers' uncommitted records instead of refusing to sync; rank_zero:
// take rank 0's values, not the newest commit's (both: a checkpoint load into rank 0);
// shards_loaded: every rank's live ranges are the ones to keep (a checkpoint load wrote them).
void sync_state(StateImpl& state, bool discard_uncommitted, bool rank_zero = false,
                bool shards_loaded = false);
// Collective: throws on every rank unless every rank's manifest equals rank 0's.
void agree_on_manifest(StateImpl& state, std::string_view what);

struct StateAccess {
  static StateImpl& impl(State& s) { return *s.impl_; }
  static const StateImpl& impl(const State& s) { return *s.impl_; }
};

}  // namespace cohort::elastic::detail
