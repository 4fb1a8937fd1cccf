#include "agent/agent_mirror.h"

#include <algorithm>

namespace cohort::discovery {

void JobMirror::replace(rendezvous::EtcdStore::Listing listing) {
  values_ = std::move(listing.values);
  revision_ = listing.revision;
  loaded_ = true;
}

void JobMirror::apply(const std::vector<rendezvous::EtcdStore::Change>& changes) {
  const int64_t held = revision_;  // one revision may hold several changes: all apply, or none
  for (const auto& change : changes) {
    if (change.revision <= held) continue;
    if (change.value) {
      values_[change.key] = *change.value;
    } else {
      values_.erase(change.key);
    }
    revision_ = std::max(revision_, change.revision);
  }
}

}  // namespace cohort::discovery
