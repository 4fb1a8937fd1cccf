// The sharded values' part of commit() and sync() (state/commit.cc, state/sync.cc): the replica
// exchange and its agreement, and, after a change of world, the plan that reshards every value
// from the copies the ranks hold, checked before anything changes.
#pragma once

#include <string>
#include <vector>

#include "base/wire.h"
#include "state/shard_plan.h"

namespace cohort::elastic::detail {

struct StateImpl;

// Local checks before a commit or sync: COHORT_STATE_REPLICAS below the world size, and every
// value at least one element per rank.
void check_shards(const StateImpl& s);
// Each sharded value's name, type and length, which every rank's commit contribution carries.
void write_shard_manifest(wire::Writer& out, const StateImpl& s);
// Throws MismatchError (the same on every rank) unless every rank's list equals rank 0's.
void check_shard_manifests(std::vector<wire::Reader>& ranks);
// Commit, once its checks passed: every replica of commit `epoch` reaches its holder, and a
// barrier proves it did on every rank; only then does promote_shards() make them the committed
// copies. Fault points (COHORT_FAULT_KILL_AT) `replicas` and `promote` come before each half.
void send_shard_replicas(StateImpl& s, uint64_t epoch);
void promote_shards(StateImpl& s);

// What a sync restores from: the rank whose values every rank takes (the one with the newest
// commit, the lowest such rank; rank 0 when `rank_zero` or when no rank has committed) and, for
// each sharded value, the plan from the copies of that commit.
struct SyncSource {
  int root = 0;
  uint64_t epoch = 0;              // the root's commit count (kLiveEpoch: no commit anywhere)
  std::vector<ReshardPlan> plans;  // one per sharded value
};
// Collective (one allgather). Throws StateLostError on every rank alike if some range of a
// sharded value is held by no rank, naming it, the ranks that held it and their hosts. With
// `live`, the plans are from the live ranges (a checkpoint load has just written them).
SyncSource plan_sync(StateImpl& s, bool rank_zero, bool live = false);
// Collective: every sharded value resharded by its plan, its replicas sent in the current world
// and promoted as commit `commit_count`.
void reshard_shards(StateImpl& s, const SyncSource& source, uint64_t commit_count);

}  // namespace cohort::elastic::detail
