// The elastic policy of cohortrun, written once for both elastic modes: events and a clock in,
// decisions out. No threads, no I/O, no processes: the server-mode job (elastic_job/elastic_job.cc)
// and the agents (agent/agent_*) learn events their own way, ask this for the decision, and
// publish it their own way (the built-in rendezvous server, or keys in etcd).
// docs/elastic-policy.md walks through it top-down.
//
// THE RULES (S: server mode, A: agent mode; where they differ today, which one is kept and why)
//  1. Hosts and slots. Discovery output (or the fixed host list) is the set of usable hosts; a
//     host keeps its place, new ones are appended (ElasticHosts). A drained host takes no work.
//  2. Failure. S: a failed worker retires its slot when others on its host are alive, else its
//     host is blacklisted; a failed launch blacklists the host. A: the agent's node is the unit:
//     any failed worker takes its node out (the agent sees only its own node). Both: the penalty
//     lasts cooldown_after(range, failures) (LO * 2^(failures-1), clamped to [LO, HI]; S adds a
//     jitter of up to LO, A none), or for good without --blacklist-cooldown-range (A: the agent
//     then stops). Kept as is: the unit differs because of what each mode can see.
//  3. Cooldown expiry: at the penalty's end the slots are usable again (if still discovered), and
//     the next round takes them (S: next_wakeup() wakes the loop; A: the agent registers again).
//  4. Forming a round. Survivors (alive workers of the last round on usable slots) are taken in
//     their rank order, then free slots host by host, up to --max-np; the round then keeps each
//     host's ranks consecutive (launcher/host_groups.h): hosts in the order of their lowest
//     surviving rank (the lowest surviving rank becomes rank 0), each host's survivors in rank
//     order then its new workers, then the hosts with new workers only. S: a round forms once every
//     wanted worker has checked in and at least min_size() of them are there. A: the same, per
//     node. min_size() is --min-np, or 1 once a worker has finished (the rest of its last round
//     may end with fewer): the same rule in both modes (round_size_needed).
//  5. Last call (A only, --rdzv-last-call): once MIN nodes are ready for the FIRST round, it waits
//     that long for more unless MAX are there (node_rounds.h: LastCall). S has no such option; kept
//     so.
//  6. Resets: every round after the first is a reset; the round that would make the count exceed
//     --reset-limit is not formed, the job stops (reset_limit_exceeded, both modes).
//  7. Stop. S: every host blacklisted; every host drained or blacklisted; fewer than --min-np
//     usable slots for longer than --elastic-timeout; the reset limit; a discovery hold past
//     --elastic-timeout (rule 8). A: a round that cannot gather MIN nodes within --elastic-timeout
//     of its planning start. Kept as is: A has no global view of blacklisted hosts.
//  8. Discovery outage. A failing script changes nothing (the last good list stands) and is
//     reported once per distinct error. A list offering fewer than --min-np slots while workers
//     run on hosts it leaves out is taken for a gap: those hosts are held for up to
//     --elastic-timeout (DiscoveryHold), then the job stops. A has no discovery script.
//  9. Drain. The drained worker's host takes no more work; its round is abandoned and the rest
//     regroup without it (both modes).
// 10. Finish. A worker that exits 0 ends nobody: no new workers start (S), the rest of its round
//     regroup; the job is done when every member of the last round finished (both), or (S) when
//     a worker finished and none runs any more. Once a worker finished, only members of the last
//     round form the next one (both): a worker started before the finish that never joined a
//     round (or, A, one re-joining from an earlier round) would sync from a fresh or older state
//     and train again what the others committed; it is told to exit (S) or left out (A).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "discovery/discovery_hold.h"
#include "launcher/clock.h"
#include "launcher/elastic_hosts.h"
#include "launcher/hosts.h"

namespace cohort::elastic_policy {

using discovery::CooldownRange;
using discovery::ElasticHostsOptions;
using discovery::HostSlots;
using discovery::NowFn;
using discovery::RoundPlan;
using discovery::SlotChanges;
using discovery::SlotRef;
using discovery::TimePoint;

// Rule 4: the fewest workers (S) or nodes (A) a round may have.
int round_size_needed(int min_size, bool a_worker_finished);
// Rule 6: `resets` counts the rounds after the first, the one about to form included.
bool reset_limit_exceeded(int resets, std::optional<int> reset_limit);
// Rule 2: how long a host, slot or node sits out after its `failures`-th failure; none: for good.
std::optional<std::chrono::milliseconds> penalty_after(const std::optional<CooldownRange>& range,
                                                       int failures, double jitter = 0.0);

// Rule 2, a worker that never checks in: one started at `started` must check in for the first
// time by start_due(); past it without, it is taken for failed, for the reason start_overdue()
// returns ("did not check in within --start-timeout ...": its launcher kills it). Both modes.
TimePoint start_due(TimePoint started, std::chrono::milliseconds start_timeout);
std::optional<std::string> start_overdue(TimePoint due, bool checked_in,
                                         std::chrono::milliseconds start_timeout, TimePoint now);

// What to do about a round, given the wanted workers and whether they have checked in.
struct RoundDecision {
  enum class Kind { kWait, kForm, kStop } kind = Kind::kWait;
  RoundPlan plan;   // kForm: the round, by rank
  int round = -1;   // kForm: its number
  std::string why;  // kStop: the user-facing reason
};

// What the server-mode job does with a discovery run's outcome.
struct DiscoveryNote {
  bool report_failure = false;   // a new error (one that repeats is reported once)
  bool report_recovery = false;  // the script works again after failing
};

// The policy of one server-mode elastic job (rules 1-4 and 6-10). Each event method returns the
// slot changes it made; each decision method says what to do now.
class ElasticPolicy {
 public:
  // Throws InvalidArgument for inconsistent options.
  explicit ElasticPolicy(ElasticHostsOptions options, NowFn now = discovery::steady_now);

  // Events.
  SlotChanges fixed_hosts(const std::vector<HostSlots>& hosts);
  // A discovery run listed `listed`; `running(host)`: a worker still runs there (rule 8).
  SlotChanges discovered(const std::vector<HostSlots>& listed,
                         const std::function<bool(const std::string& host)>& running);
  DiscoveryNote discovery_failed(const std::string& error);
  DiscoveryNote discovery_worked();
  SlotChanges worker_failed(const std::string& host, int slot, bool others_on_host_alive);
  SlotChanges launch_failed(const std::string& host);
  SlotChanges drained(const std::string& host);
  void worker_finished() { finishing_ = true; }
  // Time passed: cooldowns that ended give their slots back.
  SlotChanges tick() { return hosts_.refresh(); }

  // Decisions.
  // Why the job must stop now (rule 7 without the hold), or nothing.
  std::optional<std::string> stop_reason() const;
  // Why the discovery hold gives up now (rule 8), or nothing.
  std::optional<std::string> hold_expired() const;
  // The free usable slots that need a new worker, given the alive workers' slots in rank order.
  std::vector<SlotRef> slots_to_start(const std::vector<SlotRef>& alive) const;
  // Whether `slot` may hold a worker now.
  bool usable(const SlotRef& slot) const { return hosts_.usable(slot); }
  // The wanted workers (alive, on usable slots) in rank order; all_checked_in: each is waiting
  // for its next round. kForm counts the reset and the round.
  RoundDecision decide_round(const std::vector<SlotRef>& wanted, bool all_checked_in);
  // members_finished: every member of the current round exited 0; any_running: a worker runs.
  bool job_done(bool members_finished, bool any_running) const;
  // When time alone changes a decision (a cooldown ends, a timeout expires).
  std::optional<TimePoint> next_wakeup() const;

  bool finishing() const { return finishing_; }
  // Rule 10: whether a worker that has not been in a round yet may join one. Not once a worker
  // finished: it would start from a fresh state and train again what the others committed.
  bool takes_newcomers() const { return !finishing_; }
  int round() const { return round_; }
  int resets() const { return resets_; }
  const discovery::ElasticHosts& hosts() const { return hosts_; }

 private:
  // Rule 6's stop, once the count of resets exceeds the limit.
  std::optional<std::string> reset_stop() const;

  const int min_np_;
  const std::optional<int> reset_limit_;
  NowFn now_;
  discovery::ElasticHosts hosts_;
  discovery::DiscoveryHold hold_;
  int round_ = -1;                    // the last round formed; -1 before the first
  int resets_ = 0;                    // rounds after the first, counted when decided (rule 6)
  bool finishing_ = false;            // a worker finished: start no new ones
  std::string last_discovery_error_;  // of the current streak of failed discovery runs
};

}  // namespace cohort::elastic_policy
