// The negotiator's cached fast path: a hit is counted against its cache id (a bit per rank and a
// count), and a name ready on every member is answered once from the cached request, so a cached
// cycle at rank 0 costs a few operations per hit instead of a Request per rank and name. Every
// rule that needs the submissions one by one (mismatches, errors, stalls, shutdown) runs on the
// full table, into which a slot moves when one of them applies.
#include <algorithm>
#include <utility>

#include "cohort/errors.h"
#include "core/negotiator.h"

namespace cohort {

int Negotiator::hit(int rank, uint32_t hit) {
  Hits& hits = hits_for(hit);
  bool fast =
      !joined_[rank] && (hits.pending || open(hits)) &&
      (hits.key.first == 0 || std::binary_search(hits.members->begin(), hits.members->end(), rank));
  // The full way refuses (a joined rank, not a member) or compares (another rank's request).
  if (!fast) return add(rank, cache_->request_for(hit));
  uint64_t bit = uint64_t{1} << (rank & 63);
  uint64_t& word = hits.ranks[static_cast<size_t>(rank) >> 6];
  if (word & bit) {
    // The submitting rank's queue forbids this; a second copy means a broken peer.
    throw InternalError("rank " + std::to_string(rank) + " submitted '" + hits.key.second +
                        "' (cached id " + std::to_string(hits.id) +
                        ") twice while it was in flight");
  }
  word |= bit;
  if (ResponseCache::hit_buffer_changed(hit)) hits.request.buffer_changed = true;
  ++hits.count;
  mark_if_ready(hits);
  return hits.count;
}

Negotiator::Hits& Negotiator::hits_for(uint32_t hit) {
  uint32_t id = ResponseCache::hit_id(hit);
  size_t slot = next_slot_;
  if (slot >= hits_.size() || hits_[slot].id != id) {
    if (auto it = slot_of_.find(id); it != slot_of_.end()) {
      slot = it->second;
    } else {
      Request cached = cache_->request_for(hit);  // throws for an id rank 0 does not know
      cached.buffer_changed = false;
      slot = hits_.size();
      Hits& hits = hits_.emplace_back();
      hits.id = id;
      hits.key = {cached.process_set, cached.name};
      hits.request = std::move(cached);
      hits.ranks.assign((static_cast<size_t>(size_) + 63) / 64, 0);
      slot_of_[id] = slot;
    }
  }
  next_slot_ = slot + 1;
  return hits_[slot];
}

bool Negotiator::open(Hits& hits) {
  const Key& key = hits.key;
  auto set = sets_.find(key.first);
  if (set == sets_.end() || removed_.contains(key.first) || table_.contains(key)) return false;
  if (auto other = pending_hits_.find(key); other != pending_hits_.end()) {
    // Ranks hit two ids of one name (one evicted, one live): compare them request by request.
    to_table(hits_[other->second]);
    return false;
  }
  hits.pending = true;
  hits.members = &set->second;
  hits.first_seen = Clock::now();
  pending_hits_.emplace(key, static_cast<size_t>(&hits - hits_.data()));
  return true;
}

void Negotiator::mark_if_ready(Hits& hits) {
  if (hits.ready) return;
  int stand_ins = hits.key.first == 0 ? joined_total_ : 0;
  if (static_cast<size_t>(hits.count + stand_ins) < hits.members->size()) return;
  // A rank that hit the name and then joined counts twice: look when any rank has joined.
  auto submitted = [&](int rank) { return hits.has(rank); };
  if (stand_ins > 0 && !missing_from(hits.key.first, hits.request.type, submitted).empty()) return;
  hits.ready = true;
  ready_order_.push_back({hits.key, static_cast<int>(&hits - hits_.data())});
}

void Negotiator::to_table(Hits& hits) {
  int slot = static_cast<int>(&hits - hits_.data());
  Entry& entry = table_[hits.key];
  entry.by_rank.resize(static_cast<size_t>(size_));
  for (int rank = 0; rank < size_; ++rank) {
    if (hits.has(rank)) entry.by_rank[rank] = hits.request;
  }
  entry.count = hits.count;
  entry.first_seen = hits.first_seen;
  entry.ready = hits.ready;
  for (auto& item : ready_order_) {
    if (item.slot == slot) item.slot = kNoSlot;
  }
  close(hits);
}

void Negotiator::to_table_where(const std::function<bool(const Hits&)>& move) {
  std::vector<size_t> slots;
  for (const auto& [key, slot] : pending_hits_) {
    if (move(hits_[slot])) slots.push_back(slot);
  }
  for (size_t slot : slots) to_table(hits_[slot]);
}

void Negotiator::close(Hits& hits) {
  if (hits.pending) pending_hits_.erase(hits.key);
  std::fill(hits.ranks.begin(), hits.ranks.end(), 0);
  hits.count = 0;
  hits.pending = hits.ready = false;
  hits.members = nullptr;
  hits.request.buffer_changed = false;
}

bool Negotiator::needs_table(const Hits& hits) const {
  const Request& d = hits.request;
  if (removed_.contains(d.process_set)) return true;
  bool host_allreduce = d.type == OpType::kAllreduce && d.device == kCpuDevice;
  return d.process_set == 0 && joined_total_ > 0 && !host_allreduce;
}

Response Negotiator::construct_cached(const Hits& hits) const {
  // Every rank hit the same id: their requests are the cached one, so nothing can mismatch.
  const Request& d = hits.request;
  Response response{
      .type = d.type, .names = {d.name}, .process_set = d.process_set, .device = d.device};
  if (d.type == OpType::kAllreduce) {
    // fuse_responses() adds the element counts and how to batch them.
    response.dtype = d.dtype;
    response.reduce_op = d.reduce_op;
  }
  // A joined rank reduces a scratch buffer of its own: everyone rebinds with it.
  response.rebind = d.buffer_changed || (d.process_set == 0 && joined_total_ > 0);
  response.cache_ids = {cache_->put(d)};
  return response;
}

void Negotiator::prune_hits() {
  if (hits_.size() <= 2 * cache_->capacity() + 64) return;
  std::vector<Hits> kept;
  slot_of_.clear();
  for (auto& hits : hits_) {
    if (!hits.pending) continue;
    pending_hits_[hits.key] = kept.size();
    slot_of_[hits.id] = kept.size();
    kept.push_back(std::move(hits));
  }
  hits_ = std::move(kept);
  next_slot_ = 0;
}

}  // namespace cohort
