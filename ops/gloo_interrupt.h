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
// Known gap (Gloo 0.0~git20220518): when a pair fails while a message is half received into an
// unbound buffer (Gloo's newer collectives: gloo::allreduce's ring, broadcast, allgatherv,
// alltoallv, barrier), Gloo does not wake that buffer's waiter; it returns at Gloo's timeout.
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
