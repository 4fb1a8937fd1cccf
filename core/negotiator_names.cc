// One user name pending in two process sets at once: a rank has at most one collective of a name
// in flight (core/tensor_queue.cc), so once every rank that each set still waits for has
// submitted the name in the other set, neither can ever complete. The negotiator then fails both
// at once (MismatchError on every rank that submitted either), naming each rank's operation or
// process set, as it fails one name whose ranks disagree, rather than leaving them to the stall
// inspector. A name used in two sets by ranks that do not wait for each
// other (disjoint sets, or a rank that runs it in one set and then the other) stays legitimate.
#include <algorithm>
#include <utility>

#include "core/negotiator.h"

namespace cohort {

bool Negotiator::pending_elsewhere(const Key& key) const {
  for (const auto& set : sets_) {
    if (set.first == key.first) continue;
    Key other{set.first, key.second};
    if (table_.contains(other)) return true;
    auto named = named_.find(other);
    if (named == named_.end()) continue;
    for (size_t slot : named->second) {
      if (hits_[slot].pending) return true;
    }
  }
  return false;
}

bool Negotiator::waits_for_busy(const Entry& waiting, const Entry& busy) const {
  auto missing_ranks = missing(waiting);
  return !missing_ranks.empty() &&
         std::all_of(missing_ranks.begin(), missing_ranks.end(),
                     [&](int rank) { return busy.by_rank[rank].has_value(); });
}

bool Negotiator::fail_if_deadlocked_across_sets(const Key& key) {
  for (const auto& set : sets_) {
    if (set.first == key.first) continue;
    Key other{set.first, key.second};
    key_to_table(other);  // a cached submission of it is compared request by request
    auto it = table_.find(other);
    if (it == table_.end()) continue;
    const Entry& mine = table_.at(key);
    const Entry& theirs = it->second;
    if (mine.ready || theirs.ready) continue;
    if (!waits_for_busy(mine, theirs) || !waits_for_busy(theirs, mine)) continue;
    fail_together(key, other);
    return true;
  }
  return false;
}

void Negotiator::fail_together(const Key& a, const Key& b) {
  const Entry& first = table_.at(a);
  const Entry& second = table_.at(b);
  // Every rank submitted at most one of the two: as one entry they mismatch like any other.
  std::vector<std::optional<Request>> merged(static_cast<size_t>(size_));
  for (size_t rank = 0; rank < merged.size(); ++rank) {
    merged[rank] = first.by_rank[rank] ? first.by_rank[rank] : second.by_rank[rank];
  }
  std::string error = find_mismatch(a.second, merged).value_or("'" + a.second + "' mismatched");
  for (const Key* key : {&a, &b}) {
    const Entry& entry = table_.at(*key);
    Response response{.kind = Response::Kind::kError,
                      .type = description(entry).type,
                      .names = {key->second},
                      .error = error,
                      .process_set = key->first};
    // Only the ranks that submitted this key fail by this response (the name is theirs to
    // take); the others fail by the other key's, or had nothing of the name in flight.
    for (int rank = 0; rank < size_; ++rank) {
      if (!entry.by_rank[rank]) response.not_submitted.push_back(rank);
    }
    rejected_.push_back(std::move(response));
  }
  for (const Key* key : {&a, &b}) {
    table_.erase(*key);
    std::erase_if(ready_order_, [&](const Ready& r) { return r.key == *key; });
  }
}

}  // namespace cohort
