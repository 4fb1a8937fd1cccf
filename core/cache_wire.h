// How response-cache ids travel (core/response_cache.h is the protocol; this is its wire form):
// a worker's hits as runs of consecutive ids, and the names of a response as runs of consecutive
// known ids, the name itself only beside an id that is introduced or absent. A cached step of a
// model's tensors, whose ids were handed out in order, is then one run each way: a few bytes
// instead of 4 per tensor. Used by the control messages' encoders (core/request.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "base/wire.h"
#include "core/request.h"

namespace cohort {

// Runs let a few bytes name many ids, so one control message may name at most this many ids in
// all (hits, or a response list's names): 1 MiB of hits or 8 MiB of names once decoded, whatever
// a corrupt or hostile message claims. No real step comes near it (a model's tensors are
// thousands); an encoder given more refuses by name (check_id_count).
inline constexpr uint64_t kMaxIdsPerMessage = uint64_t{1} << 18;

// What one message's decoding has left of kMaxIdsPerMessage.
class IdBudget {
 public:
  // Takes `n` ids for `what`; throws wire::MalformedBytes naming both once the message has
  // claimed more than kMaxIdsPerMessage.
  void spend(uint64_t n, const char* what);

 private:
  uint64_t left_ = kMaxIdsPerMessage;
};

// Throws InvalidArgument naming the limit when one message would carry `n` ids (`what`).
void check_id_count(uint64_t n, const char* what);

// RequestList::hits (encoded hits, as CacheView writes them) as runs: a varint count of runs,
// then for each its first encoded hit and its length; a run's hits are consecutive ids with the
// same buffer_changed bit. Order is kept.
void write_hits(wire::Writer& w, const std::vector<uint32_t>& hits);
// Throws wire::MalformedBytes for a run that names id 0, runs past the ids, or overdraws `budget`.
std::vector<uint32_t> read_hits(wire::Reader& rd, IdBudget& budget);

// A response's names and cache ids (Response::cache_ids may be empty: nothing cached).
void write_names(wire::Writer& w, const Response& r);
// Fills r.names and r.cache_ids; names of known ids stay empty until CacheView::apply. Every name
// is taken from `budget`, the whole message's.
void read_names(wire::Reader& rd, Response& r, IdBudget& budget);

// Whether the receiver can rebuild the response's element counts (and parts) from what its
// CacheView learned when each id was introduced: an allreduce of known ids only. Then they do
// not travel.
bool counts_known(const Response& r);

}  // namespace cohort
