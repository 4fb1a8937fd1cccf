// An agent's copy of its job's keys in etcd (docs/agents.md, "How an agent reads etcd"): filled by
// one range read (EtcdStore::list, with its revision), then kept current by applying the changes
// that the agent's watch delivers after that revision (agent_watch.h), instead of reading the
// whole prefix again at every change. Values are checked by the store exactly as a range read
// checks them: a value this job did not seal is absent, whether it came in a read or an event.
// Used by the agent's thread alone.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rendezvous/etcd_store.h"

namespace cohort::discovery {

class JobMirror {
 public:
  // Replaces everything with a full read: what a watch delivered before is forgotten.
  void replace(rendezvous::EtcdStore::Listing listing);
  // Applies a watch's changes (in revision order) made after the mirror's revision; those at or
  // below it are already in the mirror (a watch asked again from an earlier revision) and skipped.
  // A put of a refused value removes the key, as a read would no longer show its old value.
  void apply(const std::vector<rendezvous::EtcdStore::Change>& changes);

  bool loaded() const { return loaded_; }
  // The job's keys (relative to its prefix) and values, as EtcdStore::list gives them.
  const std::map<std::string, std::string>& values() const { return values_; }
  // The revision the mirror holds the job at: its last read's, or that of the last change since.
  int64_t revision() const { return revision_; }

 private:
  std::map<std::string, std::string> values_;
  int64_t revision_ = 0;
  bool loaded_ = false;
};

}  // namespace cohort::discovery
