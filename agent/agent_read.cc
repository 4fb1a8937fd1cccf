// How an agent reads its job in etcd (docs/agents.md, "How an agent reads etcd"): one range read
// into its mirror (agent_mirror.h) at the start, then the changes its watch delivers, all that
// arrived applied at once before it acts; a full read again only when the watch lost changes
// (history compacted, etcd restarted or away), when etcd's revision went back, or when this
// agent's own write has not come back through the watch in time.
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
  auto listing = store_.list("");
  int64_t revision = listing.revision;
  mirror_.replace(std::move(listing));
  read_written_ = written;
  catch_up_by_.reset();
  last_heard_ = steady_now();
  watch_->watch_after(revision);
}

bool Agent::read_job() {
  auto taken = watch_->take();
  if (!mirror_.loaded() || taken.lost) {
    read_all(taken.lost.value_or(""));
    return true;
  }
  TimePoint now = steady_now();
  mirror_.apply(taken.changes);
  if (!taken.changes.empty()) last_heard_ = now;
  if (behind_own_write()) {
    if (!catch_up_by_) catch_up_by_ = now + kCatchUp;
    if (now < *catch_up_by_) {
      retry_read_at_ = *catch_up_by_;  // or sooner, when the watch delivers it
      return false;
    }
    read_all("this agent's write at revision " + std::to_string(store_.written_revision()) +
             " did not come back through the watch within " + seconds_text(kCatchUp));
    return true;
  }
  catch_up_by_.reset();
  // Nothing heard for a while: etcd is asked for its revision, so that an outage is noticed (the
  // request fails) and so is an etcd that lost its data (its revision went back).
  if (now - last_heard_ >= options_.lease_ttl / 2) {
    int64_t revision = store_.revision();
    last_heard_ = now;
    if (revision < mirror_.revision()) {
      read_all("etcd's revision " + std::to_string(revision) + " is below the " +
               std::to_string(mirror_.revision()) + " read before: etcd lost its data");
    }
  }
  return true;
}

// Whether this agent wrote something since its last full read that the mirror does not hold yet.
bool Agent::behind_own_write() const {
  int64_t written = store_.written_revision();
  return written != read_written_ && written > mirror_.revision();
}

}  // namespace cohort::discovery
