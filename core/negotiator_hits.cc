// The negotiator's cached fast path: a hit is counted against its cache id (a bit per rank and a
// count, core/hit_bits.h), and a name ready on every member is answered once from the cached
// request, so a cached cycle at rank 0 costs a few word operations per rank instead of a Request
// per rank and name. Every rule that needs the submissions one by one (mismatches, errors,
// stalls, shutdown) runs on the full table, into which a slot moves when one of them applies.
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
  if (bits_.set(rank, hits.slot, 1) == 0) submitted_twice(rank, hits);
  if (ResponseCache::hit_buffer_changed(hit)) changed_[hits.slot] = 1;
  mark_if_ready(hits);
  return bits_.count(hits.slot);
}

bool Negotiator::run_is_fast(size_t slot, uint32_t id, size_t n) {
  if (fast_run_ && fast_run_->slot == slot && fast_run_->id == id && fast_run_->n == n) return true;
  if (slot + n > hits_.size()) return false;
  // Without an early exit, so that it vectorizes: this runs for every rank and id.
  const uint32_t* ids = slot_id_.data() + slot;
  const uint8_t* fast = fast_.data() + slot;
  uint32_t differ = 0;
  uint8_t all_fast = 1;
  for (size_t k = 0; k < n; ++k) differ |= ids[k] ^ (id + static_cast<uint32_t>(k));
  for (size_t k = 0; k < n; ++k) all_fast &= fast[k];
  if (differ != 0 || all_fast == 0) return false;
  fast_run_ = Run{slot, id, n};
  return true;
}

void Negotiator::hit_run(int rank, uint32_t first, size_t n) {
  size_t slot = hits_for(first).slot;
  if (joined_[rank] || !run_is_fast(slot, ResponseCache::hit_id(first), n)) {
    for (size_t k = 0; k < n; ++k) hit(rank, first + 2 * static_cast<uint32_t>(k));
    return;
  }
  size_t set = bits_.set(rank, slot, n);
  if (set != n) submitted_twice(rank, hits_[slot + set]);
  if (ResponseCache::hit_buffer_changed(first)) std::fill_n(changed_.begin() + slot, n, 1);
  // Whether they are ready is looked at once a cycle (take_ready), not once a rank.
  runs_counted_ = true;
}

void Negotiator::hit_run(std::span<const int> ranks, uint32_t first, size_t n) {
  size_t slot = hits_for(first).slot;
  bool bulk = ranks.size() > 1 && run_is_fast(slot, ResponseCache::hit_id(first), n);
  if (!joined_ranks_.empty()) {
    for (int rank : ranks) bulk = bulk && !joined_[rank];
  }
  // Anything else (a joined rank, a hit twice) is the single rank's business, and its errors.
  if (!bulk || !bits_.set_all(ranks, slot, n)) {
    for (int rank : ranks) hit_run(rank, first, n);
    return;
  }
  if (ResponseCache::hit_buffer_changed(first)) std::fill_n(changed_.begin() + slot, n, 1);
  runs_counted_ = true;
}

void Negotiator::mark_ready_hits() {
  if (!std::exchange(runs_counted_, false)) return;
  // In slot order, which is the order of their ids where they were first hit in order: the
  // response's ids then travel as one run.
  for (auto& hits : hits_) {
    if (hits.pending) mark_if_ready(hits);
  }
}

void Negotiator::submitted_twice(int rank, const Hits& hits) const {
  // The submitting rank's queue forbids this; a second copy means a broken peer.
  throw InternalError("rank " + std::to_string(rank) + " submitted '" + hits.key.second +
                      "' (cached id " + std::to_string(slot_id_[hits.slot]) +
                      ") twice while it was in flight");
}

Negotiator::Hits& Negotiator::hits_for(uint32_t hit) {
  uint32_t id = ResponseCache::hit_id(hit);
  size_t slot = next_slot_;
  if (slot >= hits_.size() || slot_id_[slot] != id) {
    if (auto it = slot_of_.find(id); it != slot_of_.end()) {
      slot = it->second;
    } else {
      Request cached = cache_->request_for(hit);  // throws for an id rank 0 does not know
      cached.buffer_changed = false;
      slot = hits_.size();
      Key key{cached.process_set, cached.name};
      std::vector<size_t>& named = named_[key];
      named.push_back(slot);
      hits_.push_back(
          Hits{.slot = slot, .key = std::move(key), .request = std::move(cached), .named = &named});
      slot_id_.push_back(id);
      fast_.push_back(0);
      changed_.push_back(0);
      bits_.reserve(hits_.size());
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
  // The same name pending in another set: the full way checks that the two can both complete.
  if (sets_.size() > 1 && pending_elsewhere(key)) return false;
  for (size_t other : *hits.named) {
    if (other == hits.slot || !hits_[other].pending) continue;
    // Ranks hit two ids of one name (one evicted, one live): compare them request by request.
    to_table(hits_[other]);
    return false;
  }
  hits.pending = true;
  ++pending_slots_;
  hits.members = &set->second;
  hits.first_seen = Clock::now();
  fast_[hits.slot] = key.first == 0 ? 1 : 0;
  return true;
}

void Negotiator::mark_if_ready(Hits& hits) {
  if (hits.ready) return;
  // Joined ranks stand in for the world's collectives, but not twice: one may have hit the name
  // before it joined.
  int stand_ins = 0;
  if (hits.key.first == 0) {
    for (int rank : joined_ranks_) stand_ins += has(hits, rank) ? 0 : 1;
  }
  if (static_cast<size_t>(bits_.count(hits.slot) + stand_ins) < hits.members->size()) return;
  hits.ready = true;
  ready_order_.push_back({hits.key, static_cast<int>(hits.slot)});
}

void Negotiator::to_table(Hits& hits) {
  Entry& entry = table_[hits.key];
  entry.by_rank.resize(static_cast<size_t>(size_));
  Request request = hits.request;
  request.buffer_changed = changed_[hits.slot] != 0;
  for (int rank = 0; rank < size_; ++rank) {
    if (has(hits, rank)) entry.by_rank[rank] = request;
  }
  entry.count = bits_.count(hits.slot);
  entry.first_seen = hits.first_seen;
  entry.ready = hits.ready;
  for (auto& item : ready_order_) {
    if (item.slot == static_cast<int>(hits.slot)) item.slot = kNoSlot;
  }
  close({hits.slot});
}

void Negotiator::to_table_where(const std::function<bool(const Hits&)>& move) {
  std::vector<size_t> slots;
  for (const auto& hits : hits_) {
    if (hits.pending && move(hits)) slots.push_back(hits.slot);
  }
  for (size_t slot : slots) to_table(hits_[slot]);
}

std::vector<size_t> Negotiator::pending_by_key() const {
  std::vector<size_t> slots;
  for (const auto& hits : hits_) {
    if (hits.pending) slots.push_back(hits.slot);
  }
  std::sort(slots.begin(), slots.end(),
            [&](size_t a, size_t b) { return hits_[a].key < hits_[b].key; });
  return slots;
}

void Negotiator::key_to_table(const Key& key) {
  if (pending_slots_ == 0) return;
  auto named = named_.find(key);
  if (named == named_.end()) return;
  for (size_t slot : named->second) {
    if (hits_[slot].pending) to_table(hits_[slot]);
  }
}

void Negotiator::close(const std::vector<size_t>& slots) {
  if (slots.empty()) return;
  bits_.clear(slots);
  for (size_t slot : slots) {
    Hits& hits = hits_[slot];
    if (hits.pending) --pending_slots_;
    hits.pending = hits.ready = false;
    hits.members = nullptr;
    fast_[slot] = changed_[slot] = 0;
  }
  fast_run_.reset();
}

bool Negotiator::needs_table(const Hits& hits) const {
  const Request& d = hits.request;
  if (removed_.contains(d.process_set)) return true;
  bool host_allreduce = d.type == OpType::kAllreduce && d.device == kCpuDevice;
  return stood_in(hits) && !host_allreduce;  // cannot_run() says why
}

bool Negotiator::stood_in(const Hits& hits) const {
  return static_cast<size_t>(bits_.count(hits.slot)) < hits.members->size();
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
  response.rebind = changed_[hits.slot] != 0 || stood_in(hits);
  response.cache_ids = {cache_->put(slot_id_[hits.slot], d)};
  return response;
}

void Negotiator::prune_hits() {
  // Idle slots are made again from the cache on their next hit; pending ones keep their bits.
  if (!cache_ || hits_.size() <= 2 * cache_->capacity() + 64 || pending_slots_ != 0) return;
  hits_.clear();
  slot_id_.clear();
  fast_.clear();
  changed_.clear();
  slot_of_.clear();
  named_.clear();
  fast_run_.reset();
  bits_ = HitBits(size_);
  next_slot_ = 0;
}

}  // namespace cohort
