#include "agent/agent_mirror.h"

#include <algorithm>

#include "cohort/errors.h"

namespace cohort::discovery {

void JobMirror::replace(rendezvous::EtcdStore::Listing listing, KeyRanges ranges) {
  ranges_ = std::move(ranges);
  values_.clear();
  for (auto& [key, value] : listing.values) {
    if (holds(key)) values_.emplace(key, std::move(value));
  }
  revision_ = listing.revision;
  listed_ = listing.revision;
  applied_.clear();
  loaded_ = true;
}

void JobMirror::narrow(KeyRanges ranges) {
  KeyRanges wider = std::move(ranges_);
  ranges_ = std::move(ranges);
  for (const auto& range : ranges_) {
    bool within = std::any_of(wider.begin(), wider.end(), [&](const rendezvous::KeyRange& r) {
      return r.contains(range.begin) &&
             (r.end.empty() || (!range.end.empty() && range.end <= r.end));
    });
    if (!within) throw InternalError("the agent's mirror cannot narrow to keys it did not hold");
  }
  std::erase_if(values_, [&](const auto& kv) { return !holds(kv.first); });
}

bool JobMirror::holds(std::string_view key) const {
  return std::any_of(ranges_.begin(), ranges_.end(),
                     [&](const rendezvous::KeyRange& r) { return r.contains(key); });
}

bool JobMirror::holds_change(const std::string& key, int64_t revision) const {
  if (!holds(key) || revision <= listed_) return true;
  auto it = applied_.find(key);
  return it != applied_.end() && it->second >= revision;
}

std::optional<std::string> JobMirror::value(const std::string& key) const {
  if (!holds(key)) throw InternalError("the agent's mirror does not hold key '" + key + "'");
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

void JobMirror::apply(const std::vector<rendezvous::EtcdStore::Change>& changes) {
  for (const auto& change : changes) {
    if (change.revision <= listed_) continue;
    int64_t& last = applied_[change.key];
    if (change.revision <= last) continue;
    last = change.revision;
    revision_ = std::max(revision_, change.revision);
    if (!holds(change.key)) continue;
    if (change.value) {
      values_[change.key] = *change.value;
    } else {
      values_.erase(change.key);
    }
  }
}

}  // namespace cohort::discovery
