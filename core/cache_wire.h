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

// RequestList::hits (encoded hits, as CacheView writes them) as runs: a varint count of runs,
// then for each its first encoded hit and its length; a run's hits are consecutive ids with the
// same buffer_changed bit. Order is kept.
void write_hits(wire::Writer& w, const std::vector<uint32_t>& hits);
// Throws wire::MalformedBytes for a run that names id 0, runs past the ids, or makes the list
// longer than any cache holds.
std::vector<uint32_t> read_hits(wire::Reader& rd);

// A response's names and cache ids (Response::cache_ids may be empty: nothing cached).
void write_names(wire::Writer& w, const Response& r);
// Fills r.names and r.cache_ids; names of known ids stay empty until CacheView::apply.
void read_names(wire::Reader& rd, Response& r);

// Whether the receiver can rebuild the response's element counts (and parts) from what its
// CacheView learned when each id was introduced: an allreduce of known ids only. Then they do
// not travel.
bool counts_known(const Response& r);

}  // namespace cohort
