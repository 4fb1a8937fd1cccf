// Building a Gloo context through a rendezvous store, in a way that a cancellation can abandon.
//
// Gloo's connectFullMesh waits in two places: in the store (for the other ranks' addresses),
// which the caller's store makes cancellable, and on the listening side of each pair for the
// peer to connect, which nothing in Gloo can wake before its timeout: a peer that died while the
// round formed held every survivor there for the whole timeout. So on cancellation this rank
// connects to its own listening pairs and hangs up: each pair then counts as connected, Gloo goes
// on to its next wait (the store, which throws), and connect_full_mesh throws InternalError with
// the cancellation's reason instead of returning a context that is not what it seems.
#pragma once

#include <gloo/context.h>

#include <memory>

#include "ops/gloo_backend.h"

namespace gloo::rendezvous {
class Store;
}

namespace cohort::ops {

std::shared_ptr<gloo::Context> connect_full_mesh(const GlooBackendOptions& options,
                                                 gloo::rendezvous::Store& store);

}  // namespace cohort::ops
