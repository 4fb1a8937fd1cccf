// Gloo contexts connected without any store: over a subset of an existing context's ranks (the
// members trade the addresses of their new pairs over the parent's existing connections), or over
// the ranks of another backend (Gloo under mpirun: the addresses travel through MPI).
//
// Why not a store: the parent backend is built from a store it does not keep (cohortrun's signed
// rendezvous client, or a test's HashStore), so keeping one alive for later splits would tie every
// launcher to the backend's lifetime. A store whose set/get ride on the parent context does not fit
// either: Debian's Gloo connectFullMesh reads other ranks' keys before it writes its own addresses,
// so such a store would have to know which rank writes which key. Trading addresses pairwise, as
// gloo::rendezvous::ContextFactory does for a whole context, needs neither.
#pragma once

#include <gloo/context.h>

#include <chrono>
#include <memory>
#include <span>
#include <string>

#include "ops/backend.h"

namespace cohort::ops {

// Called by exactly the parent ranks listed in `ranks` (sorted, distinct, holding the caller);
// returns a context over them, numbered by position in `ranks`, on the parent's device and with
// the parent's timeout. `key` is the same on every member and tells concurrent splits' messages
// apart; members that disagree on `key` or `ranks` fail (InternalError) instead of connecting.
// The parent's non-members are not involved and the parent stays usable. Throws gloo exceptions
// on communication failures.
std::shared_ptr<gloo::Context> connect_gloo_subgroup(const std::shared_ptr<gloo::Context>& parent,
                                                     std::span<const int> ranks,
                                                     const std::string& key);

// A context over every rank of `bootstrap` (a backend that already connects them all: MPI under
// mpirun), its pairs listening on `hostname` and their addresses traded through bootstrap's
// alltoallv, as a split trades them over its parent. Called by every rank of `bootstrap`.
std::shared_ptr<gloo::Context> connect_gloo_through(Backend& bootstrap, const std::string& hostname,
                                                    std::chrono::milliseconds timeout);

}  // namespace cohort::ops
