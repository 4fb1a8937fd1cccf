// The response cache: after a tensor has been negotiated once, ranks refer to it by a small id
// instead of describing it again, in both directions. Steady-state training submits the same
// names with the same parameters every step, so a step's control traffic shrinks to a list of ids
// each way (4 bytes per tensor instead of its name, shape and options).
//
// Rank 0 owns the cache (ResponseCache): it assigns ids when it sends a response, in least
// recently used order up to COHORT_CACHE_CAPACITY entries, and never reuses an id. The other
// ranks follow (CacheView): they learn each id from the response that introduced it, and send an
// id only for a submission whose parameters equal those the id was given for; anything else is
// sent in full and renegotiated. An evicted id stays known to rank 0 until every rank has applied
// the response list that evicted it, so an id already on its way is never misread.
//
// This file is the protocol's one home: the ids and what they stand for (in a Response, with the
// bit that says whether the name follows; in a RequestList's hits, with the bit that says whether
// the submission's buffer changed), and both ends of it; core/cache_wire.h packs them into runs on
// the wire, and leaves out an allreduce's element counts where every name is a known id (the
// receiving CacheView learned them when the id was introduced, joined or not). Rank 0 counts hits
// against their ids without rebuilding requests (Negotiator::hit); the roles only pass the
// numbers along.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/request.h"

namespace cohort {

// Whether a collective of this kind can be cached: every rank describes it identically.
bool cacheable(const Request& request);
// A cache id as it travels in Response::cache_ids: the id, and whether this response introduces
// it (then the name travels too). 0 means not cached.
uint32_t cache_id(uint32_t wire);
bool introduces(uint32_t wire);
// Whether a response's name travels beside this Response::cache_ids value (the name of a known id
// does not: CacheView::apply fills it in).
bool name_travels(uint32_t wire);

class ResponseCache {
 public:
  ResponseCache(size_t capacity, int size);
  size_t capacity() const { return capacity_; }

  // The id under which `request` (as every rank described it) is cached from now on: its current
  // id, or a new one, replacing an entry of the same name with other parameters and evicting the
  // least recently used entry when full. 0 when caching is off or the request is not cacheable.
  uint32_t put(const Request& request);
  // The same for a request known to have been cached under `id` (Negotiator's cached path): no
  // name is looked up while the id is live.
  uint32_t put(uint32_t id, const Request& request);
  // The request cached under `id`, including evicted ids some rank may not know are gone yet;
  // nullptr if unknown (a broken peer).
  const Request* find(uint32_t id) const;
  // The live id cached for `request` with the same parameters, as Negotiator::hit takes it (the
  // id shifted left, the lowest bit whether the buffer changed), if any: rank 0's own hits.
  std::optional<uint32_t> hit(const Request& request) const;
  // The same, trying `hint` (an id, as hit_id() gives it) first: no name is hashed where the
  // request is the hint's, as rank 0's own are cycle after cycle.
  std::optional<uint32_t> hit(const Request& request, uint32_t hint) const;
  // Ids evicted since the last call, to announce in the next response list.
  std::vector<uint32_t> take_evicted();
  // The request a worker's cache hit (RequestList::hits) stands for. Throws InternalError for an
  // id rank 0 does not know (a broken peer).
  Request request_for(uint32_t hit) const;
  // The id of an encoded hit, and whether that submission's buffer changed.
  static uint32_t hit_id(uint32_t hit) { return hit >> 1; }
  static bool hit_buffer_changed(uint32_t hit) { return (hit & 1) != 0; }
  // Rank 0 is about to send response list number `sequence` (counting from 1).
  void sent(uint64_t sequence) { sequence_ = sequence; }
  // Rank 0 is about to send `list`, the next response list: it announces the ids evicted since
  // the last one (sent(), counting for itself).
  void sending(ResponseList& list);
  // `rank` has applied `applied` response lists: evictions it has seen can be forgotten.
  void acknowledge(int rank, uint64_t applied);

 private:
  struct Slot {
    Request request;
    std::list<uint32_t>::iterator lru;
  };
  void evict(uint32_t id);

  size_t capacity_;
  uint32_t next_id_ = 1;
  uint64_t sequence_ = 0;
  std::unordered_map<uint32_t, Slot> live_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::list<uint32_t> lru_;  // most recently used first
  std::vector<uint32_t> evicted_;
  // Evicted ids, still resolvable until every rank has applied the list that evicted them.
  std::map<uint64_t, std::vector<std::pair<uint32_t, Request>>> retired_;
  std::vector<uint64_t> applied_;  // per rank
};

class CacheView {
 public:
  // Adds this rank's `request` to `list`: as a hit if it is cached with the same parameters, else
  // in full.
  void add(RequestList& list, Request&& request);
  // How many response lists this rank has applied (RequestList::applied).
  uint64_t applied() const { return applied_; }

  // The id to send instead of `request`, if it is cached with the same parameters.
  std::optional<uint32_t> hit(const Request& request) const;
  // This rank sent `request` in full: if rank 0 caches it, these are the parameters of its id.
  void sent_in_full(const Request& request);
  // Resolves the names rank 0 sent as ids, learns the ids it introduced, then forgets the ids it
  // evicted, and counts the list as applied.
  // Throws InternalError for an id this rank does not know (a broken peer).
  void apply(ResponseList& list);

 private:
  struct Known {
    std::string name;
    std::optional<Request> request;  // absent where this rank did not submit it (it had joined)
    std::vector<int64_t> counts;     // an allreduce's element counts, one per tensor
  };
  // Learns the ids `response` introduces, and resolves the names of those it knows.
  void resolve(Response& response);
  // Rebuilds the element counts (and parts) of an allreduce whose counts did not travel.
  void fill_counts(Response& response) const;
  std::unordered_map<uint32_t, Known> by_id_;
  std::unordered_map<std::string, uint32_t> id_of_;
  std::unordered_map<std::string, Request> in_full_;
  uint64_t applied_ = 0;
};

}  // namespace cohort
