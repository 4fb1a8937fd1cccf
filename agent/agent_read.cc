// How an agent reads its job in etcd (docs/agents.md, "How an agent reads etcd"): one range read
// into its mirror (agent_mirror.h) at the start, then the changes its watch delivers, all that
// arrived applied at once before it acts; a full read again when the watch lost changes (history
// compacted, etcd restarted or away), after an outage or the loss of its lease, when this agent's
// own write has not come back through the watch in time, and once per lease TTL. Changes to keys
// that no agent acts on (in_agent_snapshot) are applied, and wake the agent to do nothing more.
#include <algorithm>

#include "agent/agent.h"
#include "base/log.h"
#include "launcher/seconds_text.h"

namespace cohort::discovery {
namespace {

// How long an agent waits for its own last write to come back through the watch before it reads
// the whole job instead: it acts only on a mirror that holds what it wrote.
constexpr std::chrono::milliseconds kCatchUp{2000};

}  // namespace

void Agent::read_all(const std::string& why) {
  if (!why.empty()) log::info("agent: reading the whole job again: ", why);
  int64_t written = store_.written_revision();
  last_full_read_ = steady_now();  // tried: retried after an outage at the outage's pace
  auto listing = store_.list("");
  int64_t revision = listing.revision;
  mirror_.replace(std::move(listing));
  read_written_ = written;
  reread_.reset();
  catch_up_by_.reset();
  watch_->watch_after(revision);
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
  if (behind_own_write()) {
    if (!catch_up_by_) catch_up_by_ = now + kCatchUp;
    if (now < *catch_up_by_) {
      retry_read_at_ = *catch_up_by_;  // or sooner, when the watch delivers it
      return Read::kBehind;
    }
    read_all("this agent's write at revision " + std::to_string(store_.written_revision()) +
             " did not come back through the watch within " + seconds_text(kCatchUp));
    return Read::kChanged;
  }
  catch_up_by_.reset();
  // Once per lease TTL in full, whatever the watch delivered: an outage is noticed (the read
  // fails), an etcd that lost its data is read as it is now, and a watch that went quiet on a
  // connection that carries nothing keeps this agent behind for a lease TTL at most.
  if (now - last_full_read_ >= options_.lease_ttl) {
    read_all("");
    return Read::kChanged;
  }
  bool changed = std::any_of(taken.changes.begin(), taken.changes.end(),
                             [](const auto& change) { return in_agent_snapshot(change.key); });
  return changed ? Read::kChanged : Read::kUnchanged;
}

// Whether this agent wrote something since its last full read that the mirror does not hold yet.
bool Agent::behind_own_write() const {
  int64_t written = store_.written_revision();
  return written != read_written_ && written > mirror_.revision();
}

}  // namespace cohort::discovery
