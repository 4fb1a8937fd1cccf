#include "core/response_cache.h"

#include <algorithm>
#include <utility>

#include "cohort/errors.h"
#include "core/cache_wire.h"

namespace cohort {
namespace {

// Ids rank 0 introduces in a response carry this bit: the name follows on the wire.
constexpr uint32_t kIntroduced = 0x8000'0000u;
constexpr uint32_t kLastId = kIntroduced - 1;

// A worker's hit is the id shifted left, its lowest bit saying whether the buffer changed.
uint32_t encode_hit(uint32_t id, bool buffer_changed) {
  return (id << 1) | (buffer_changed ? 1 : 0);
}

// Whether two requests are equal but for buffer_changed (Request's operator== less that field),
// without copying either. The bindings fail to compile when Request gains a field: add it here.
bool same_parameters(const Request& a, const Request& b) {
  const auto& [name, type, dtype, reduce_op, root, prescale, postscale, shape, buffer_changed,
               process_set, device, group, splits, members] = a;
  static_cast<void>(buffer_changed);
  return type == b.type && dtype == b.dtype && reduce_op == b.reduce_op && root == b.root &&
         prescale == b.prescale && postscale == b.postscale && process_set == b.process_set &&
         device == b.device && name == b.name && shape == b.shape && group == b.group &&
         splits == b.splits && members == b.members;
}

}  // namespace

bool cacheable(const Request& request) {
  return request.type == OpType::kAllreduce || request.type == OpType::kBroadcast ||
         request.type == OpType::kReducescatter;
}

uint32_t cache_id(uint32_t wire) {
  return wire & ~kIntroduced;
}
bool introduces(uint32_t wire) {
  return (wire & kIntroduced) != 0;
}
bool name_travels(uint32_t wire) {
  return wire == 0 || introduces(wire);
}

ResponseCache::ResponseCache(size_t capacity, int size) : capacity_(capacity), applied_(size, 0) {}

uint32_t ResponseCache::put(const Request& request) {
  if (capacity_ == 0 || !cacheable(request)) return 0;
  if (auto it = by_name_.find(request.name); it != by_name_.end()) {
    Slot& slot = live_.at(it->second);
    if (same_parameters(slot.request, request)) {
      lru_.splice(lru_.begin(), lru_, slot.lru);
      return it->second;
    }
    evict(it->second);  // the same name with other parameters: never reuse the old entry
  }
  if (next_id_ > kLastId) return 0;  // ids are never reused; after 2^31 of them, stop caching
  if (live_.size() >= capacity_) evict(lru_.back());
  uint32_t id = next_id_++;
  lru_.push_front(id);
  Request stored = request;
  stored.buffer_changed = false;
  live_.emplace(id, Slot{std::move(stored), lru_.begin()});
  by_name_[request.name] = id;
  return id | kIntroduced;
}

uint32_t ResponseCache::put(uint32_t id, const Request& request) {
  auto it = live_.find(id);
  // A live id is its name's only one, with the parameters it was given for: put(request) would
  // find it by name and refresh it.
  if (it == live_.end()) return put(request);
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return id;
}

void ResponseCache::evict(uint32_t id) {
  auto it = live_.find(id);
  by_name_.erase(it->second.request.name);
  lru_.erase(it->second.lru);
  // Until the list announcing it has been applied everywhere, a rank may still send this id.
  retired_[sequence_ + 1].emplace_back(id, std::move(it->second.request));
  live_.erase(it);
  evicted_.push_back(id);
}

const Request* ResponseCache::find(uint32_t id) const {
  if (auto it = live_.find(id); it != live_.end()) return &it->second.request;
  for (const auto& [sequence, ids] : retired_) {
    for (const auto& [retired, request] : ids) {
      if (retired == id) return &request;
    }
  }
  return nullptr;
}

std::optional<uint32_t> ResponseCache::hit(const Request& request) const {
  if (!cacheable(request)) return std::nullopt;
  auto it = by_name_.find(request.name);
  if (it == by_name_.end() || !same_parameters(live_.at(it->second).request, request)) {
    return std::nullopt;
  }
  return encode_hit(it->second, request.buffer_changed);
}

std::optional<uint32_t> ResponseCache::hit(const Request& request, uint32_t hint) const {
  // A live id is its name's only one: where the hint's request is this one, hit() finds it.
  auto it = live_.find(hint);
  if (it != live_.end() && same_parameters(it->second.request, request)) {
    return encode_hit(hint, request.buffer_changed);
  }
  return hit(request);
}

Request ResponseCache::request_for(uint32_t hit) const {
  const Request* cached = find(hit_id(hit));
  if (!cached) {
    throw InternalError("a rank referred to cached tensor id " + std::to_string(hit_id(hit)) +
                        ", which rank 0 does not know");
  }
  Request request = *cached;
  request.buffer_changed = hit_buffer_changed(hit);
  return request;
}

std::vector<uint32_t> ResponseCache::take_evicted() {
  return std::exchange(evicted_, {});
}

void ResponseCache::sending(ResponseList& list) {
  list.evicted = take_evicted();
  sent(sequence_ + 1);
}

void ResponseCache::acknowledge(int rank, uint64_t applied) {
  applied_.at(static_cast<size_t>(rank)) = applied;
  // Rank 0 itself applies every list as it sends it.
  applied_[0] = sequence_;
  // Every rank's list would make this quadratic in the ranks: look only when there is something
  // to forget.
  if (retired_.empty()) return;
  uint64_t everywhere = *std::min_element(applied_.begin(), applied_.end());
  retired_.erase(retired_.begin(), retired_.upper_bound(everywhere));
}

void CacheView::add(RequestList& list, Request&& request) {
  if (auto id = hit(request)) {
    list.hits.push_back(encode_hit(*id, request.buffer_changed));
  } else {
    sent_in_full(request);
    list.requests.push_back(std::move(request));
  }
}

std::optional<uint32_t> CacheView::hit(const Request& request) const {
  if (!cacheable(request)) return std::nullopt;
  auto id = id_of_.find(request.name);
  if (id == id_of_.end()) return std::nullopt;
  const Known& known = by_id_.at(id->second);
  if (!known.request || !same_parameters(*known.request, request)) return std::nullopt;
  return id->second;
}

void CacheView::sent_in_full(const Request& request) {
  if (!cacheable(request)) return;
  Request& stored = in_full_[request.name];
  stored = request;
  stored.buffer_changed = false;
}

void CacheView::resolve(Response& response) {
  size_t tensor = 0;  // the first of this name's element counts
  for (size_t i = 0; i < response.cache_ids.size(); ++i) {
    uint32_t wire = response.cache_ids[i];
    uint32_t id = cache_id(wire);
    std::string& name = response.names[i];
    // Parts that do not match the names are the executor's to refuse (executor_allreduce.cc).
    size_t parts = i < response.parts.size() ? static_cast<size_t>(response.parts[i]) : 1;
    if (id != 0 && introduces(wire)) {
      auto sent = in_full_.find(name);
      Known known{name, std::nullopt, {}};
      if (sent != in_full_.end()) known.request = sent->second;
      if (tensor + parts <= response.counts.size()) {
        auto first = response.counts.begin() + static_cast<ptrdiff_t>(tensor);
        known.counts.assign(first, first + static_cast<ptrdiff_t>(parts));
      }
      by_id_[id] = std::move(known);
      id_of_[name] = id;
    } else if (id != 0) {
      auto known = by_id_.find(id);
      if (known == by_id_.end()) {
        throw InternalError("rank 0 referred to cached tensor id " + std::to_string(id) +
                            ", which this rank does not know");
      }
      name = known->second.name;
    }
    tensor += parts;
  }
}

void CacheView::fill_counts(Response& response) const {
  bool several = false;
  for (uint32_t wire : response.cache_ids) {
    const auto& counts = by_id_.at(cache_id(wire)).counts;
    if (counts.empty()) {
      throw InternalError("rank 0 sent allreduce '" + by_id_.at(cache_id(wire)).name +
                          "' without its element counts, which this rank never learned");
    }
    response.counts.insert(response.counts.end(), counts.begin(), counts.end());
    several = several || counts.size() != 1;
  }
  if (!several) return;
  for (uint32_t wire : response.cache_ids) {
    response.parts.push_back(static_cast<int64_t>(by_id_.at(cache_id(wire)).counts.size()));
  }
}

void CacheView::apply(ResponseList& list) {
  for (auto& response : list.responses) {
    resolve(response);
    if (response.counts.empty() && counts_known(response)) fill_counts(response);
    for (const auto& name : response.names) in_full_.erase(name);
  }
  // Last: an id may be introduced and evicted by the same list.
  for (uint32_t id : list.evicted) {
    auto it = by_id_.find(id);
    if (it == by_id_.end()) continue;
    if (auto named = id_of_.find(it->second.name); named != id_of_.end() && named->second == id) {
      id_of_.erase(named);
    }
    by_id_.erase(it);
  }
  ++applied_;
}

}  // namespace cohort
