// Keeps the job's current round record in etcd as its planner published it. A writer without
// the job secret can put any bytes at rounds/<r> (or delete it), and an etcd restarted without
// its data has none; the store refuses bytes it did not seal, which on its own would make every
// agent see the round before as the last one (or none): plan a second round r, stop for "no
// round yet", or write stale assignments. Each agent instead remembers the last round record it
// read (or published), and when etcd no longer holds it, republishes the record verbatim
// (sealing is deterministic, so every agent writes the same bytes) over the refused ones, with a
// compare-and-set on their revision, and acts on the record it holds. Its caller says why.
#pragma once

#include <string>

#include "agent/agent_view.h"
#include "rendezvous/etcd_store.h"

namespace cohort::discovery {

// Writes `record` (format_agent_round) as round `round`'s, unless the job already holds one for it
// (the round record is written once); true if it holds `record` afterwards. The one writer of
// rounds/<r>: its planner publishing it, and RoundGuard republishing it.
bool publish_round_record(rendezvous::EtcdStore& store, int round, const std::string& record);

class RoundGuard {
 public:
  enum class Check {
    kHeld,         // etcd holds the newest round this agent knows of
    kRepublished,  // it did not: the remembered record is back in etcd and in `s`
    kConflict,     // etcd holds another record for that round that this job sealed (never while
                   // the job's agents follow the protocol): act on the next read instead
  };
  // Takes a fresh snapshot: remembers its round when newer, repairs etcd and `s` when its last
  // round is older than the one remembered.
  Check check(rendezvous::EtcdStore& store, AgentSnapshot& s);
  int round() const { return round_; }
  // The record this agent has just published for `round` (format_agent_round).
  void published(int round, const std::string& record);

 private:
  int round_ = -1;
  std::string record_;
};

}  // namespace cohort::discovery
