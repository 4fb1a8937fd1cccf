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
// Whether commit() overlaps the replica transfer with the next step: the State holds sharded
// values, COHORT_STATE_REPLICAS > 0, more than one rank, and COHORT_STATE_OVERLAP_DISABLE unset.
// Then a commit counts at once, its generation before is kept, and the next commit's allgather
// (which every rank reaches only once its replicas of this one arrived) confirms it.
bool overlaps(const StateImpl& s);
// Commit, before its allgather: waits for the replicas of the commit before, if they still travel
// (throws the transfer's error).
void settle_shards(StateImpl& s);
// Commit, once its checks passed: every value's own copy of commit `epoch` taken and its replicas
// started; without overlap, they are waited for and a barrier proves they arrived on every rank.
// Fault points (COHORT_FAULT_KILL_AT): `replicas` before the transfer starts, `promote` after it
// (overlapping: while the replicas travel; otherwise: once they arrived, before the barrier).
void start_shard_replicas(StateImpl& s, uint64_t epoch);
// Every value's settled replicas become its committed ones, its older own copy dropped (its
// memory kept for the next commit with `keep_spare`).
void confirm_shards(StateImpl& s, bool keep_spare);

// What a sync restores from: the rank whose values every rank takes (the one with the newest
// commit, the lowest such rank; rank 0 when `rank_zero` or when no rank has committed) and, for
// each sharded value, the plan from the copies of that commit.
struct SyncSource {
  int root = 0;
  uint64_t epoch = 0;              // the commit restored (kLiveEpoch: no commit anywhere)
  std::vector<ReshardPlan> plans;  // one per sharded value
  bool step_back = false;          // the root goes back to its previous generation first
  // Every rank restored commit `epoch` since its last commit or sync: the values of ValueScope
  // kSameOnEveryRank stay as each rank holds them (never with step_back or rank_zero).
  bool kept_everywhere = false;
};
// Collective (one allgather), after waiting for any replicas in flight (what failed to arrive is
// left out). Where the root's newest commit has a range no rank holds but the generation before
// it is whole (a holder failed while that commit's replicas travelled), the source is that
// generation, logged on every rank. Otherwise throws StateLostError on every rank alike if some
// range of a sharded value is held by no rank, naming it, the ranks that held it and their hosts.
// With `live`, the plans are from the live ranges (a checkpoint load has just written them).
// Clears StateImpl::restored.
SyncSource plan_sync(StateImpl& s, bool rank_zero, bool live = false);
// Collective: every sharded value resharded by its plan, its replicas sent in the current world
// and promoted as commit `commit_count`.
void reshard_shards(StateImpl& s, const SyncSource& source, uint64_t commit_count);

}  // namespace cohort::elastic::detail
