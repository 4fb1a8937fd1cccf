// How an agent reads its job in etcd (docs/agents.md, "How an agent reads etcd"): one read of
// its key ranges (agent_ranges.h: every key for the agent that plans, what it acts on for the
// others) into its mirror (agent_mirror.h) at the start, then the changes its watch delivers, all
// that arrived applied at once before it acts; a full read again when the watch lost changes
// (history compacted, etcd restarted or away), after an outage or the loss of its lease, and once
// per lease TTL. It acts only on a mirror that holds its own writes. Changes to keys that no agent
// acts on (in_agent_snapshot) are applied, and wake the agent to do nothing more.
#include <algorithm>

#include "agent/agent.h"
#include "base/log.h"

namespace cohort::discovery {

void Agent::read_all(const std::string& why, std::map<std::string, std::string>* startup) {
  if (!why.empty()) log::info("agent: reading the whole job again: ", why);
  store_.forget_written_keys();    // the read holds them all
  last_full_read_ = steady_now();  // tried: retried after an outage at the outage's pace
  auto listing = store_.list(startup ? startup_ranges(options_.node) : wanted_);
  if (startup) *startup = listing.values;
  int64_t revision = listing.revision;
  mirror_.replace(std::move(listing), wanted_);
  reread_.reset();
  watch_->watch_after(revision, wanted_);
}

AgentSnapshot Agent::snapshot() const {
  AgentSnapshot s = parse_agent_snapshot(mirror_.values());
  s.every_node = holds_every_node(mirror_.ranges());
  return s;
}

bool Agent::follow_planning(const AgentSnapshot& s) {
  bool plans = plans_rounds(s.lead, options_.node, planning_.has_value());
  KeyRanges wanted = plans ? planner_ranges() : follower_ranges(options_.node);
  if (wanted == wanted_) return false;
  wanted_ = std::move(wanted);
  if (plans) {
    read_all("this agent leads: it plans the job's rounds, and reads every key");
    return true;
  }
  log::info("agent: another agent leads: this agent reads only what it acts on");
  mirror_.narrow(wanted_);  // as current as before for what it keeps: it watches on from there
  watch_->watch_after(mirror_.revision(), wanted_);
  return true;
}

Agent::Read Agent::read_job() {
  auto taken = watch_->take();
  // After an outage, or with its lease gone, the agent decides on a full read: a watch that went
  // quiet through a cut-off link may still be waiting on a connection that carries nothing.
  if (!taken.lost && reread_) taken.lost = reread_;
  if (!taken.lost && lease_lost_) taken.lost = "this agent's etcd lease is gone";
  if (!mirror_.loaded() || taken.lost) {
    read_all(taken.lost.value_or(""));
    return Read::kChanged;
  }
  TimePoint now = steady_now();
  mirror_.apply(taken.changes);
  unacted_ = unacted_ || std::any_of(taken.changes.begin(), taken.changes.end(),
                                     [](const auto& c) { return in_agent_snapshot(c.key); });
  // Not before its own writes are back: the watch is behind (a busy etcd), and catches up; a watch
  // that stalled for good is replaced by the full read once per lease TTL.
  if (behind_own_write() && now - last_full_read_ < options_.lease_ttl) return Read::kBehind;
  // Once per lease TTL in full, whatever the watch delivered: an outage is noticed (the read
  // fails), an etcd that lost its data is read as it is now, and a watch that went quiet on a
  // connection that carries nothing keeps this agent behind for a lease TTL at most.
  if (now - last_full_read_ >= options_.lease_ttl) {
    read_all("");
    return Read::kChanged;
  }
  return unacted_ ? Read::kChanged : Read::kUnchanged;
}

// Whether this agent wrote a key it reads since its last full read that the mirror does not hold
// yet: key by key, as the watches of different ranges do not deliver in order with one another.
bool Agent::behind_own_write() const {
  for (const auto& [key, revision] : store_.written_keys()) {
    if (!mirror_.holds_change(key, revision)) return true;
  }
  return false;
}

}  // namespace cohort::discovery
