// Ends the waits of a Gloo collective that a failed connection leaves blocked until Gloo's
// timeout, once the backend is aborted.
//
// Why the interrupter (gloo_interrupt.h) is not enough: Gloo 0.0~git20220518 fails a pair without
// waking every wait on it. A send posted just as the peer's socket is reset (writev answers EPIPE
// or ECONNRESET, which Gloo's asynchronous path takes for "try later") sits in the pair's queue,
// and Pair::signalException wakes only the bound buffers of that queue, not the unbound ones;
// a receive half read is not woken either. Such a wait lasts COHORT_TIMEOUT_SECONDS although every
// socket is shut down: seen as rank 0 of an elastic job stuck for 20 s in the host-update
// broadcast after a peer was SIGKILLed, and killed by cohortrun for missing its check-in.
//
// Gloo's public abortWaitSend() / abortWaitRecv() end one wait of an unbound buffer each, and the
// next wait spends the flag, so a single call may end a wait that was about to finish anyway. So
// once aborted, the breaker calls them on every registered buffer again every few milliseconds
// until no collective is left in flight; the collectives then see the abort and throw.
#pragma once

#include <gloo/transport/unbound_buffer.h>

#include <initializer_list>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace cohort::ops {

class GlooWaitBreaker {
 public:
  GlooWaitBreaker() = default;
  GlooWaitBreaker(const GlooWaitBreaker&) = delete;
  GlooWaitBreaker& operator=(const GlooWaitBreaker&) = delete;
  ~GlooWaitBreaker();

  class Watch;

  // One collective in flight, for its scope. Make it before checking whether the backend was
  // aborted, so that an abort cannot fall between the check and the registration.
  class InFlight {
   public:
    explicit InFlight(GlooWaitBreaker& breaker);
    ~InFlight();
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;

   private:
    friend class GlooWaitBreaker::Watch;
    GlooWaitBreaker& breaker_;
  };

  // Buffers of a collective in flight that an abort wakes, for the Watch's scope. Declare it after
  // whatever owns the buffers (Gloo's options take them), so that it lets go of them first.
  class Watch {
   public:
    Watch(InFlight& in_flight, std::initializer_list<gloo::transport::UnboundBuffer*> buffers);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    GlooWaitBreaker& breaker_;
    std::vector<gloo::transport::UnboundBuffer*> mine_;
  };

  // Wakes every wait of the collectives in flight, now and until they have all ended. Returns at
  // once; idempotent; thread-safe.
  void break_waits();

 private:
  void keep_breaking() EXCLUDES(mutex_);

  Mutex mutex_;
  CondVar ended_;  // a collective ended
  std::vector<gloo::transport::UnboundBuffer*> buffers_ GUARDED_BY(mutex_);
  int in_flight_ GUARDED_BY(mutex_) = 0;
  bool breaking_ GUARDED_BY(mutex_) = false;
  std::thread thread_;  // started once, under mutex_; joined by the destructor
};

}  // namespace cohort::ops
