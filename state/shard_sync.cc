#include "state/shard_sync.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "base/log.h"
#include "cohort/cohort.h"
#include "core/runtime_slot.h"
#include "state/agreement.h"
#include "state/shard_layout.h"
#include "state/state_impl.h"

namespace cohort::elastic::detail {
namespace {

std::string elements(ShardRange r) {
  return "elements [" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ")";
}

// One rank's part of the sync's allgather.
struct Description {
  bool has_commit = false;
  bool restored = false;  // its values are its last commit (StateImpl::restored)
  uint64_t commit_count = 0;
  std::optional<uint64_t> previous;         // the commit its previous generation is of
  std::vector<std::string> hosts;           // its last world's hosts (empty: none)
  std::vector<std::string> shapes;          // per sharded value: its type and length
  std::vector<std::vector<HeldCopy>> held;  // per sharded value
};

std::string shape_of(const ShardedValue& v) {
  return std::to_string(v.length()) + " elements of " + std::string(cohort::to_string(v.dtype()));
}

wire::Writer describe(const StateImpl& s, bool restored) {
  wire::Writer out;
  out.u8(s.has_commit ? 1 : 0);
  out.u8(restored ? 1 : 0);
  out.u64(s.commit_count);
  out.u8(s.previous ? 1 : 0);
  out.u64(s.previous ? s.previous->commit_count : 0);
  const ShardWorld& last = s.shard_world.last();
  out.u64(last.hosts.size());
  for (const std::string& h : last.hosts) out.str(h);
  out.u64(s.sharded.size());
  for (const ShardedValue& v : s.sharded) {
    out.str(shape_of(v));
    std::vector<HeldCopy> held = v.held();
    out.u64(held.size());
    for (const HeldCopy& c : held) {
      out.u64(c.epoch);
      out.u64(c.range.begin);
      out.u64(c.range.end);
    }
  }
  return out;
}

Description parse(const StateImpl& s, std::span<const std::byte> bytes) {
  wire::Reader in(bytes);
  Description d;
  d.has_commit = in.u8() == 1;
  d.restored = in.u8() == 1;
  d.commit_count = in.u64();
  bool has_previous = in.u8() == 1;
  uint64_t previous = in.u64();
  if (has_previous) d.previous = previous;
  d.hosts.resize(in.u64());
  for (std::string& h : d.hosts) h = in.str();
  if (in.u64() != s.sharded.size()) throw MismatchError("ranks track different sharded values");
  d.held.resize(s.sharded.size());
  for (auto& held : d.held) {
    d.shapes.push_back(in.str());
    held.resize(in.u64());
    for (HeldCopy& c : held) {
      c.epoch = in.u64();
      c.range.begin = in.u64();
      c.range.end = in.u64();
    }
  }
  if (!in.done()) throw wire::MalformedBytes("bytes left over");
  return d;
}

void fault_point(std::string_view phase) {
  cohort::detail::current_runtime()->fault_point(phase);
}

// Waits for every value's replicas in flight and proves with a barrier that every rank has its own:
// the commit without overlap, and every sync.
void settle_everywhere(StateImpl& s, uint64_t epoch, bool faults) {
  settle_shards(s);
  if (faults) fault_point("promote");
  cohort::barrier(s.collective("shard/replicas/" + std::to_string(epoch)));
}

void start_all(StateImpl& s, uint64_t epoch) {
  const ShardWorld& world = s.shard_world.current(s.collective("shard/hosts"));
  std::string round = std::to_string(epoch);
  for (ShardedValue& v : s.sharded) v.take_own_copy(epoch);
  for (ShardedValue& v : s.sharded) {
    v.start_replicas(s.collective("shard/replicas/" + v.name() + "/" + round), world);
  }
}

int choose_root(const std::vector<Description>& all, bool rank_zero) {
  int root = 0;
  if (rank_zero) return root;
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    const Description &d = all[r], &best = all[root];
    if (d.has_commit && (!best.has_commit || d.commit_count > best.commit_count)) root = r;
  }
  return root;
}

// Who held `missing` in the root's last world of `hosts`: each owner and its replicas.
std::string last_holders(const ShardedValue& v, ShardRange missing,
                         const std::vector<std::string>& hosts) {
  int size = static_cast<int>(hosts.size());
  int replicas = static_cast<int>(cohort::detail::current_runtime()->config().state_replicas);
  std::string out;
  for (int owner = 0; owner < size; ++owner) {
    ShardRange r = shard_range(v.length(), owner, size);
    if (r.end <= missing.begin || r.begin >= missing.end) continue;
    out += std::string(out.empty() ? "" : "; ") + "rank " + std::to_string(owner) + " on " +
           hosts[owner];
    if (replicas >= size) continue;
    for (int h : replica_holders(owner, hosts, replicas)) {
      out += ", replica on rank " + std::to_string(h) + " on " + hosts[h];
    }
  }
  return out;
}

// Plans every sharded value from the copies of commit `epoch` the ranks hold; the index of the
// first value some range of which no rank holds, if any.
std::optional<size_t> plan_all(const StateImpl& s, const std::vector<Description>& all,
                               uint64_t epoch, std::vector<ReshardPlan>& plans) {
  std::optional<size_t> lost;
  int size = static_cast<int>(all.size());
  for (size_t i = 0; i < s.sharded.size(); ++i) {
    std::vector<HeldRange> held;
    for (int r = 0; r < size; ++r) {
      for (const HeldCopy& c : all[r].held[i]) {
        if (c.epoch == epoch) held.push_back({r, c.range});
      }
    }
    plans.push_back(plan_reshard(s.sharded[i].length(), size, held));
    if (!plans.back().missing.empty() && !lost) lost = i;
  }
  return lost;
}

// "sharded value 'V': commit E cannot be restored: no rank of this world holds elements [a, b)
// ...", each range followed by who held it in the last world of `hosts` (none when empty).
std::string lost_text(const ShardedValue& v, const ReshardPlan& plan, uint64_t epoch,
                      const std::vector<std::string>& hosts = {}) {
  std::string what = "sharded value '" + v.name() + "': commit " + std::to_string(epoch) +
                     " cannot be restored: no rank of this world holds ";
  for (size_t i = 0; i < plan.missing.size(); ++i) {
    what += (i ? " or " : "") + elements(plan.missing[i]);
    if (!hosts.empty()) what += " (" + last_holders(v, plan.missing[i], hosts) + ")";
  }
  return what;
}

[[noreturn]] void raise_missing(const ShardedValue& v, const ReshardPlan& plan, uint64_t epoch,
                                const std::vector<std::string>& hosts) {
  std::string what = lost_text(v, plan, epoch, hosts);
  if (!hosts.empty())
    what += ", as the last world of " + std::to_string(hosts.size()) + " ranks held them";
  throw StateLostError(what + "; every copy of them is gone");
}

}  // namespace

void check_shards(const StateImpl& s) {
  if (s.sharded.empty()) return;
  auto replicas = cohort::detail::current_runtime()->config().state_replicas;
  auto size = static_cast<uint64_t>(cohort::size());
  if (replicas >= size) {
    throw InvalidArgument("COHORT_STATE_REPLICAS=" + std::to_string(replicas) +
                          " must be below the world size (" + std::to_string(size) + ")");
  }
  for (const ShardedValue& v : s.sharded) {
    if (v.length() < size) {
      throw InvalidArgument("sharded value '" + v.name() + "' has " + std::to_string(v.length()) +
                            " elements, fewer than the " + std::to_string(size) +
                            " ranks of this world: every rank needs at least one");
    }
  }
}

void write_shard_manifest(wire::Writer& out, const StateImpl& s) {
  out.u64(s.sharded.size());
  for (const ShardedValue& v : s.sharded) {
    out.str(v.name());
    out.str(std::string(cohort::to_string(v.dtype())));
    out.u64(v.length());
  }
}

void check_shard_manifests(std::vector<wire::Reader>& ranks) {
  std::vector<std::string> first;
  for (size_t r = 0; r < ranks.size(); ++r) {
    std::vector<std::string> mine(ranks[r].u64());
    for (std::string& m : mine) {  // one read per statement: the order matters
      std::string name = ranks[r].str();
      std::string type = ranks[r].str();
      uint64_t length = ranks[r].u64();
      m = "'" + name + "' (" + type + ", " + std::to_string(length) + " elements)";
    }
    if (r == 0) first = mine;
    if (mine == first) continue;
    auto list = [](const std::vector<std::string>& l) {
      std::string out;
      for (const auto& e : l) out += (out.empty() ? "" : ", ") + e;
      return out.empty() ? std::string("none") : out;
    };
    throw MismatchError("commit failed, nothing changed: rank " + std::to_string(r) +
                        " tracks the sharded values " + list(mine) + ", rank 0 " + list(first));
  }
}

bool overlaps(const StateImpl& s) {
  const auto& config = cohort::detail::current_runtime()->config();
  return !s.sharded.empty() && config.state_overlap && config.state_replicas > 0 &&
         cohort::size() > 1;
}

void settle_shards(StateImpl& s) {
  for (ShardedValue& v : s.sharded) v.settle(/*quiet=*/false);
}

void start_shard_replicas(StateImpl& s, uint64_t epoch) {
  if (s.sharded.empty()) return;
  fault_point("replicas");
  start_all(s, epoch);
  if (overlaps(s)) {
    fault_point("promote");  // the replicas on their way: a kill here loses them
  } else {
    settle_everywhere(s, epoch, /*faults=*/true);
  }
}

void confirm_shards(StateImpl& s, bool keep_spare) {
  for (ShardedValue& v : s.sharded) v.confirm(keep_spare);
}

// Whether every rank's values are commit `epoch`, restored since (so the values that are the same
// on every rank need not be sent).
bool restored_everywhere(const std::vector<Description>& all, uint64_t epoch) {
  return std::all_of(all.begin(), all.end(), [epoch](const Description& d) {
    return d.has_commit && d.restored && d.commit_count == epoch;
  });
}

SyncSource plan_sync(StateImpl& s, bool rank_zero, bool live) {
  for (ShardedValue& v : s.sharded) v.settle(/*quiet=*/true);  // what arrived counts, no more
  bool restored = std::exchange(s.restored, false);            // whatever happens next, it is spent
  wire::Writer mine = describe(s, restored);
  Gathered gathered = allgather_bytes(s.collective("sync/holdings"), mine.bytes());
  std::vector<Description> all;
  try {
    for (auto bytes : gathered.ranks) all.push_back(parse(s, bytes));
  } catch (const wire::MalformedBytes& e) {
    throw MismatchError(std::string("sync: a rank's holdings do not parse: ") + e.what());
  }
  for (size_t r = 1; r < all.size(); ++r) {
    for (size_t i = 0; i < s.sharded.size(); ++i) {
      if (all[r].shapes[i] == all[0].shapes[i]) continue;
      throw MismatchError("sync failed, nothing changed: sharded value '" + s.sharded[i].name() +
                          "' has " + all[r].shapes[i] + " on rank " + std::to_string(r) + " and " +
                          all[0].shapes[i] + " on rank 0");
    }
  }
  SyncSource source;
  source.root = choose_root(all, rank_zero);
  const Description& root = all[source.root];
  source.epoch = root.has_commit && !live ? root.commit_count : kLiveEpoch;
  std::optional<size_t> lost = plan_all(s, all, source.epoch, source.plans);
  if (lost && root.previous && source.epoch != kLiveEpoch) {
    // The newest commit's replicas were still on their way when a holder failed: its generation
    // before is whole on the survivors, so every rank goes back to it.
    std::vector<ReshardPlan> older;
    if (!plan_all(s, all, *root.previous, older)) {
      log::warning("sync: ", lost_text(s.sharded[*lost], source.plans[*lost], root.commit_count),
                   " (its replicas had not all arrived); every rank goes back to commit ",
                   *root.previous, " and trains again what was committed after it");
      source.epoch = *root.previous;
      source.plans = std::move(older);
      source.step_back = true;
      return source;
    }
  }
  if (lost) raise_missing(s.sharded[*lost], source.plans[*lost], root.commit_count, root.hosts);
  source.kept_everywhere =
      !rank_zero && source.epoch != kLiveEpoch && restored_everywhere(all, source.epoch);
  return source;
}

void reshard_shards(StateImpl& s, const SyncSource& source, uint64_t commit_count) {
  s.reshard_bytes = 0;
  if (s.sharded.empty()) return;
  fault_point("reshard");
  for (size_t i = 0; i < s.sharded.size(); ++i) {
    ShardedValue& v = s.sharded[i];
    s.reshard_bytes += v.reshard(s.collective("sync/reshard/" + v.name()), source.plans[i],
                                 source.epoch, cohort::rank(), cohort::size());
  }
  start_all(s, commit_count);
  settle_everywhere(s, commit_count, /*faults=*/false);
  confirm_shards(s, /*keep_spare=*/overlaps(s));
}

}  // namespace cohort::elastic::detail
