// An agent's copy of its job's keys in etcd (docs/agents.md, "How an agent reads etcd"): filled by
// one range read (EtcdStore::list, with its revision), then kept current by applying the changes
// that the agent's watch delivers after that revision (agent_watch.h), instead of reading the
// whole prefix again at every change. Values are checked by the store exactly as a range read
// checks them: a value this job did not seal is absent, whether it came in a read or an event.
// The mirror holds the key ranges the agent reads (agent_ranges.h) and no other key: asking it
// for a key outside them is a bug, and throws. Used by the agent's thread alone.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/agent_ranges.h"
#include "rendezvous/etcd_store.h"

namespace cohort::discovery {

class JobMirror {
 public:
  // Replaces everything with a full read of `ranges`: what a watch delivered before is forgotten,
  // and a key of `listing` outside `ranges` is left out.
  void replace(rendezvous::EtcdStore::Listing listing, KeyRanges ranges);
  // Keeps only the keys in `ranges`, which its ranges must hold (InternalError otherwise): the
  // mirror is as current for them as it was for its wider ones.
  void narrow(KeyRanges ranges);
  // Applies a watch's changes made after the mirror's full read: each key's in revision order,
  // while the keys of different ranges (different watches on one stream) may come in any order.
  // A change at or below the key's last one applied (a watch asked again from an earlier
  // revision) is already in the mirror, and skipped.
  // A put of a refused value removes the key, as a read would no longer show its old value. A
  // change outside the mirror's ranges (none comes from a watch of them) is left out.
  void apply(const std::vector<rendezvous::EtcdStore::Change>& changes);

  bool loaded() const { return loaded_; }
  // The key ranges it holds.
  const KeyRanges& ranges() const { return ranges_; }
  bool holds(std::string_view key) const;
  // The job's keys in its ranges (relative to its prefix) and values, as EtcdStore::list gives
  // them.
  const std::map<std::string, std::string>& values() const { return values_; }
  // Whether the mirror holds the change of `key` made at `revision` (or a later one): true for a
  // key outside its ranges, which it never holds.
  bool holds_change(const std::string& key, int64_t revision) const;
  // The value of `key`, if set; InternalError if `key` is outside the mirror's ranges.
  std::optional<std::string> value(const std::string& key) const;
  // The highest revision the mirror holds a change of: its last read's, or a later change's.
  int64_t revision() const { return revision_; }

 private:
  KeyRanges ranges_;
  std::map<std::string, std::string> values_;
  int64_t revision_ = 0;
  int64_t listed_ = 0;                      // the last full read's revision
  std::map<std::string, int64_t> applied_;  // key -> its last change applied since that read
  bool loaded_ = false;
};

}  // namespace cohort::discovery
