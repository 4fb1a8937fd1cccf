#include "agent/agent_round_guard.h"

#include "agent/agent_records.h"

namespace cohort::discovery {

bool publish_round_record(rendezvous::EtcdStore& store, int round, const std::string& record) {
  return store.create(round_key(round), record, 0);
}

RoundGuard::Check RoundGuard::check(rendezvous::EtcdStore& store, AgentSnapshot& s) {
  AgentJobView& view = s.view;
  if (view.last_round_number >= round_) {
    if (view.last_round) published(view.last_round_number, format_agent_round(*view.last_round));
    return Check::kHeld;
  }
  if (!publish_round_record(store, round_, record_)) return Check::kConflict;
  view.last_round = parse_agent_round(record_);
  view.last_round_number = round_;
  return Check::kRepublished;
}

void RoundGuard::published(int round, const std::string& record) {
  if (round < round_) return;
  round_ = round;
  record_ = record;
}

}  // namespace cohort::discovery
