// The hosts and slots an elastic job may use: discovery updates kept in stable order, slots
// retired and hosts blacklisted after failures (with exponential cooldowns), the placement of
// ranks for a new round with the surviving workers first, and the checks that end the job.
// Time comes from an injectable clock; nothing here sleeps or starts processes.
#pragma once

#include <chrono>
#include <compare>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/clock.h"
#include "launcher/hosts.h"

namespace cohort::discovery {

// One slot of a host: 0 .. slots-1. A worker keeps its slot across rounds, while its local rank
// may change when lower slots of its host are empty.
struct SlotRef {
  std::string host;
  int slot = 0;
  auto operator<=>(const SlotRef&) const = default;
};

// How the usable slots changed. Workers on removed slots must be stopped.
// A slot retired or a host blacklisted by a failure.
struct Penalized {
  std::string host;
  std::optional<int> slot;                            // none: the whole host
  int failures = 0;                                   // of that slot or host so far
  std::optional<std::chrono::milliseconds> cooldown;  // none: for good
};

struct SlotChanges {
  std::vector<SlotRef> added;
  std::vector<SlotRef> removed;
  std::optional<Penalized> penalized;  // by the failure that made these changes
  std::vector<std::string> drained;    // hosts that began draining (drain(), or discovery)
  bool empty() const { return added.empty() && removed.empty(); }
  // "added b:0-3; removed a:2", or "no change".
  std::string describe() const;
};

// --blacklist-cooldown-range LO HI.
struct CooldownRange {
  std::chrono::milliseconds lo;
  std::chrono::milliseconds hi;
};

struct ElasticHostsOptions {
  int min_np = 1;
  std::optional<int> max_np;                          // none: every usable slot
  std::chrono::milliseconds elastic_timeout{600000};  // how long fewer than min_np slots may last
  std::optional<int> reset_limit;                     // none: unlimited
  // None: a retired slot or blacklisted host never returns, as in Horovod.
  std::optional<CooldownRange> cooldown;
  // Values in [0, 1) that spread cooldowns by up to LO, so hosts do not return all at once;
  // none: cooldowns are exact.
  std::function<double()> jitter;
};

struct RoundSlot {
  SlotAssignment assignment;
  int slot = 0;           // the slot on assignment.host
  bool survivor = false;  // false: a new worker must be started there
};

struct RoundPlan {
  std::vector<RoundSlot> slots;  // by rank
  // Survivors that have no place in the new round (their slot or host is no longer usable, or
  // max_np is exceeded): stop them.
  std::vector<SlotRef> dropped;
};

class ElasticHosts {
 public:
  // Throws InvalidArgument for inconsistent options. Until update() there are no hosts, and the
  // elastic timeout runs from now.
  explicit ElasticHosts(ElasticHostsOptions options, NowFn now = steady_now);

  // A new discovered set. Hosts already in the job keep their place; new ones are appended in
  // the given order; hosts no longer listed leave the job (a host that returns is new). Throws
  // InvalidArgument for a host listed twice, a bad name or a bad slot count.
  SlotChanges update(const std::vector<HostSlots>& discovered);
  // Picks up the cooldowns that have ended: their slots are usable again if still discovered.
  SlotChanges refresh();
  // The worker on (host, slot) failed. If others on the host are alive, the host is evidently
  // up: only this slot is retired. Otherwise the whole host is blacklisted. Either lasts an
  // exponential cooldown (or for ever without a cooldown range).
  SlotChanges worker_failed(const std::string& host, int slot, bool others_on_host_alive);
  // Starting a worker on `host` failed: the host is blacklisted.
  SlotChanges launch_failed(const std::string& host);
  // A worker on `host` drained (its machine is going): the host takes no work until discovery
  // stops listing it (a host that returns after that is new).
  SlotChanges drain(const std::string& host);
  // Drained, or listed by discovery as "host:slots:drain".
  bool draining(const std::string& host) const;

  // The ranks of a new round. `survivors` are the slots whose workers are alive, in their old
  // rank order (then workers not yet in a round); they are taken first, then free usable slots,
  // host by host in job order, slot by slot, up to max_np. The round then keeps each host's ranks
  // consecutive (group_by_host, launcher/host_groups.h): hosts in the order of their first taken
  // slot (so the lowest surviving rank becomes rank 0), each host's survivors in their order, then
  // its free slots. Fewer than min_np slots is not an error here: check enough_slots() first.
  // Without `fill_free_slots` the round holds survivors only (a job whose workers are finishing
  // starts no new ones).
  RoundPlan plan_round(const std::vector<SlotRef>& survivors, bool fill_free_slots = true) const;

  // The discovered hosts in job order (blacklisted ones included).
  const std::vector<HostSlots>& hosts() const { return hosts_; }
  bool usable(const SlotRef& slot) const { return usable_at(slot, now_()); }
  bool blacklisted(const std::string& host) const;
  int usable_slots() const { return usable_count(now_()); }
  bool enough_slots() const { return usable_slots() >= options_.min_np; }

  // Each returns the user-facing reason the job must stop, or nothing.
  std::optional<std::string> all_hosts_blacklisted() const;
  std::optional<std::string> elastic_timeout_expired() const;
  // The first of these, or that every host drains or is blacklisted. (The reset limit is the
  // elastic policy's: elastic_policy/elastic_policy.h.)
  std::optional<std::string> stop_reason() const;
  // When time alone changes something: a cooldown ends or the elastic timeout expires. An event
  // loop sleeps until then and calls refresh() and stop_reason().
  std::optional<TimePoint> next_wakeup() const;

 private:
  struct Penalty {
    int failures = 0;
    TimePoint until;  // TimePoint::max(): permanent
  };

  bool active(const Penalty* penalty, TimePoint t) const;
  bool blacklisted_at(const std::string& host, TimePoint t) const;
  bool usable_at(const SlotRef& slot, TimePoint t) const;
  int usable_count(TimePoint t) const;
  std::vector<SlotRef> usable_list(TimePoint t) const;
  Penalized penalize(Penalty& penalty, TimePoint now, const std::string& what);
  // The changes a failure made: observe(now), with the penalty it gave `host` (or its `slot`).
  SlotChanges changes_after(Penalized penalized, const std::string& host, std::optional<int> slot,
                            TimePoint now);
  // When the current shortage of slots began, as of `now`, following cooldowns that ended since
  // the last observation.
  std::optional<TimePoint> shortage_since(TimePoint now) const;
  // Brings the shortage tracking up to `now` under the current state.
  void catch_up(TimePoint now);
  // catch_up, then the change in usable slots since the last observation.
  SlotChanges observe(TimePoint now);
  std::string describe_blacklisting(const std::string& host, TimePoint now) const;

  ElasticHostsOptions options_;
  NowFn now_;
  std::vector<HostSlots> hosts_;
  std::map<std::string, Penalty> host_penalties_;
  std::set<std::string> drained_;  // by drain(); discovery's marks are in hosts_
  std::map<SlotRef, Penalty> slot_penalties_;
  std::vector<SlotRef> last_usable_;
  TimePoint last_observed_;
  std::optional<TimePoint> short_since_;
};

// The cooldown after the `failures`-th failure: LO * 2^(failures-1), plus jitter * LO, clamped to
// [LO, HI].
std::chrono::milliseconds cooldown_after(const CooldownRange& range, int failures, double jitter);

}  // namespace cohort::discovery
