#include "discovery/agent_round_guard.h"

#include "base/log.h"
#include "discovery/agent_records.h"

namespace cohort::discovery {

bool RoundGuard::check(rendezvous::EtcdStore& store, AgentSnapshot& s) {
  AgentJobView& view = s.view;
  if (view.last_round_number >= round_) {
    if (view.last_round) published(view.last_round_number, format_agent_round(*view.last_round));
    return true;
  }
  std::string key = round_key(round_);
  // One rate limit for every repair: a writer picks how often it tampers, not how much is logged.
  log::limited(log::Level::kWarning, "agent-round-repair", "agent: tampering: etcd no longer ",
               "holds the record of round ", round_, " that this agent read (", key,
               " is missing, or refused as not sealed by this job); republishing it");
  if (!store.create(key, record_, 0)) {
    log::warning("agent: could not republish ", key, " (written again meanwhile); acting on ",
                 "the next read of etcd");
    return false;
  }
  view.last_round = parse_agent_round(record_);
  view.last_round_number = round_;
  return true;
}

void RoundGuard::published(int round, const std::string& record) {
  if (round < round_) return;
  round_ = round;
  record_ = record;
}

}  // namespace cohort::discovery
