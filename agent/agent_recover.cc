// Agent mode when etcd loses what the agents wrote (docs/agents.md, "What each etcd failure
// costs"). The workers never need etcd to train, so an agent never stops them for etcd's sake:
// - its lease expired during an outage (etcd frozen, or cut off from every node, for longer than
//   the lease TTL): if every node's lease went with it, the job did not move on, and the agent
//   takes a new lease and registers again; one whose lease alone expired is counted as gone;
// - its record was deleted or overwritten (no secret needed): it writes the record again;
// - etcd restarted without its data: the agent publishes the round its workers are in again
//   from memory, with its workers' exits, then registers as above;
// - the job's marker was deleted or overwritten: it sets the marker again.
#include <unistd.h>

#include <algorithm>

#include "agent/agent.h"
#include "agent/agent_job_id.h"
#include "agent/agent_records.h"
#include "base/log.h"
#include "cohort/errors.h"
#include "launcher/job_report.h"
#include "launcher/seconds_text.h"

namespace cohort::discovery {

std::unique_ptr<rendezvous::EtcdLease> Agent::grant_lease() {
  return std::make_unique<rendezvous::EtcdLease>(
      store_options_.etcd, options_.lease_ttl, [this](const std::string& why) {
        log::warning("agent: its etcd lease is gone (", why,
                     "); it takes a new one unless the job went on without this node");
        lease_lost_ = true;
        wake_.signal();
      });
}

// Rounds are never deleted: a snapshot without the last round this agent saw comes from an etcd
// that lost the job's keys (restarted without its data: the job's marker is gone too), or from a
// writer without the secret (deleted or overwrote the record). Either way its workers still train
// in that round, so the agent goes on from memory and publishes the round again (RoundGuard),
// with the exits its workers reported. False: act on the next read instead.
bool Agent::keep_round(AgentSnapshot& s, bool job_keys_lost) {
  auto check = round_guard_.check(store_, s);
  if (check == RoundGuard::Check::kHeld) return true;
  int number = round_guard_.round();
  if (check == RoundGuard::Check::kConflict) {
    log::warning("agent: could not republish ", round_key(number),
                 " (written again meanwhile); acting on the next read of etcd");
    retry_read_at_ = steady_now();
    return false;
  }
  if (!job_keys_lost) {
    // One rate limit for every repair: a writer picks how often it tampers, not how much is logged.
    log::limited(log::Level::kWarning, "agent-round-repair", "agent: tampering: etcd no longer ",
                 "holds the record of round ", number, " that this agent read (", round_key(number),
                 " is missing, or refused as not sealed by this job); ", "republished it");
  } else if (republished_round_ != number) {
    announce("etcd lost the job's keys (round " + std::to_string(number) +
             " is gone from it); this node's workers train on in that round, and the agent "
             "publishes it again");
  }
  if (republished_round_ != number) {
    republished_round_ = number;
    for (const auto& exit : reported_exits_) unreported_exits_.insert(exit);
  }
  flush_exits();
  for (const auto& [worker, how] : reported_exits_) {
    s.exits[worker] = how;
    if (how == "0") s.view.finished.insert(worker);
  }
  return true;
}

// The marker is missing from the mirror: deleted, overwritten by bytes this job did not seal
// (another secret's marker, forged ones), or lost with etcd's data. The running job keeps its id
// (agent_job_id.h): every agent that notices sets the marker again, whatever is there, so that a
// job of another secret started later is refused at once. At most once per lease TTL: a marker
// taken again sooner is set at this agent's first read after that (it reads etcd at least once a
// lease TTL), so that two jobs that both hold the id (docs/agents.md) do not overwrite each
// other's marker as fast as etcd allows; a job of another secret that starts meanwhile is refused
// by this job's names and rounds.
void Agent::keep_marker() {
  if (mirror_.value("job")) return;
  TimePoint now = steady_now();
  if (marker_kept_ && now - *marker_kept_ < options_.lease_ttl) return;
  log::limited(log::Level::kWarning, "agent-marker-repair", "agent: the job's marker ",
               store_options_.prefix, "job is missing from etcd or was refused (deleted, ",
               "overwritten without this job's secret, or lost with etcd's data); setting it ",
               "again, so that a job of another secret is refused the id");
  keep_job_marker(store_);  // throws while etcd cannot be reached: tried again at the next read
  marker_kept_ = now;
}

// While this node's lease was gone, the job went on without it: a later round than the one its
// workers are in was published without them, or claimed by another agent, whose lease held.
bool Agent::counted_as_gone(const AgentSnapshot& s) const {
  bool in_round = std::any_of(local_.begin(), local_.end(), [&](const auto& kv) {
    const LocalWorker& w = kv.second;
    return w.assigned_round == followed_round_ && !w.expected_exit && !w.killed;
  });
  if (followed_round_ < 0 || !in_round) return false;  // nothing of this node to lose
  if (s.view.last_round_number > followed_round_ && s.view.last_round) {
    const auto& members = s.view.last_round->members;
    return std::none_of(members.begin(), members.end(),
                        [&](const AgentMember& m) { return m.node == options_.node; });
  }
  return std::any_of(s.planners.begin(), s.planners.end(), [&](const auto& claim) {
    return claim.first > followed_round_ && claim.second != options_.node;
  });
}

// Whether this agent's lease is gone: etcd said so, or this node's record vanished and etcd says
// so when asked (before the snapshot is acted on: a round planned without this node must find it
// still in the round its workers are in).
bool Agent::lease_gone(const AgentSnapshot& s) {
  if (!lease_lost_ && registered_ && !s.view.nodes.contains(options_.node) && !lease_->alive()) {
    lease_lost_ = true;
  }
  return lease_lost_;
}

// etcd said this agent's lease is gone, and with it the keys under it (names/, agents/, a
// planner's claim). False when the agent stops instead of registering again.
bool Agent::recover_lease(const AgentSnapshot& s) {
  if (counted_as_gone(s)) {
    stop_job(
        1, "node " + options_.node + "'s etcd lease expired, so the other agents count it as gone");
    return false;
  }
  lease_ = grant_lease();  // throws while etcd cannot be reached: tried again at the next read
  lease_lost_ = false;
  planning_.reset();  // its claim went with the old lease: whoever claims again plans afresh
  std::string pid = std::to_string(::getpid());
  if (!store_.create(name_key(options_.node), pid, lease_->id())) {
    stop_job(1, "node name '" + options_.node + "' was taken by another agent of job '" +
                    options_.job_id + "' while this agent's lease was gone");
    return false;
  }
  store_.set_leased(name_key(options_.node), pid, lease_->id());  // under the new lease
  absent_.rejoined(steady_now(), lease_->ttl());
  announce("node " + options_.node +
           "'s etcd lease expired while etcd was away from every node; "
           "it took a new lease and registers again (nodes still without a record count as "
           "gone after " +
           seconds_text(lease_->ttl()) + ")");
  return true;
}

// Whether this agent may plan a round without the nodes that have no record: the policy's rule
// (AbsentNodes), asking etcd about this agent's own lease only when the rule needs it. A lease
// found gone is recovered at once (a fresh read).
bool Agent::may_count_absent_as_gone(const AgentSnapshot& s) {
  return absent_.count_as_gone(s.view, [this] {
    if (lease_->alive()) return true;
    lease_lost_ = true;
    retry_read_at_ = steady_now();
    return false;
  });
}

bool Agent::workers_running() const {
  return std::any_of(local_.begin(), local_.end(),
                     [](const auto& kv) { return !kv.second.expected_exit && !kv.second.killed; });
}

}  // namespace cohort::discovery
