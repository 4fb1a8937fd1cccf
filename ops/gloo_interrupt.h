// Interrupting a Gloo context from another thread: shuts down the TCP socket of each of its
// pairs, so that an operation blocked on it fails at once with gloo::IoException, exactly as when
// a peer's process dies, and the peers see the connections close.
//
// Why sockets and not Gloo's API: Pair::close() and Context::closeConnections() close the
// sockets but wake no waiting thread (it would sleep until Gloo's timeout), and the call Gloo's
// own timeout path uses to fail a pair and wake its waiters (Pair::signalExceptionExternal) is
// protected, in a header that Debian's libgloo-dev cannot compile (gloo/common/memory.h is not
// shipped). A socket shut down by shutdown(2) takes Gloo's tested path instead: its device thread
// reads end-of-file, fails the pair and wakes every buffer waiting on it.
//
// The descriptors are duplicates taken when the context connected, so a descriptor that Gloo
// closes and the process reuses can never be shut down by mistake. The duplicates keep the sockets
// open until this object is destroyed: destroy it with the context.
//
// Not every wait on an unbound buffer (Gloo's newer collectives) is woken by a failed pair: a send
// queued as the socket broke, or a receive half read, waits until Gloo's timeout. The backend's
// wait breaker (gloo_wait_breaker.h) ends those after an abort, for every buffer the backend makes;
// the one it cannot reach is the scratch buffer gloo::allreduce's ring makes for itself.
#pragma once

#include <gloo/context.h>

#include <vector>

#include "base/fd.h"

namespace cohort::ops {

class GlooInterrupter {
 public:
  // On the thread that connected `context`, right after it connected.
  explicit GlooInterrupter(gloo::Context& context);

  // Thread-safe; may be called while another thread runs a collective on the context. Idempotent.
  void interrupt() const;

  // How many of the context's pairs were found (size - 1 once connected).
  size_t sockets() const { return sockets_.size(); }

 private:
  std::vector<Fd> sockets_;
};

}  // namespace cohort::ops
