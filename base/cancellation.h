// A one-shot "stop waiting" signal that a blocking wait can poll beside its own sockets. Round
// formation hands one to every connect, accept and rendezvous wait it makes; the launcher's notice
// that the round was abandoned (a member died while it formed) fires it, so the waits end at once
// instead of at their timeouts.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>

#include "base/fd.h"
#include "base/mutex.h"

namespace cohort {

class Cancellation {
 public:
  Cancellation();
  Cancellation(const Cancellation&) = delete;
  Cancellation& operator=(const Cancellation&) = delete;

  // Thread-safe and idempotent; the first reason is kept.
  void cancel(const std::string& reason);
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  // Why it was cancelled; empty before.
  std::string reason() const;
  // Readable (POLLIN) once cancelled, and stays readable.
  int fd() const { return fd_.get(); }
  // Throws InternalError carrying the reason, once cancelled.
  void throw_if_cancelled() const;

  // For waits that cannot poll fd() (inside Gloo, a blocking request): `hook` runs once on
  // cancellation with the reason, on the cancelling thread, or at once if already cancelled. It
  // must be quick, must not throw and must not call back into this object. Returns an id for
  // remove_hook().
  using Hook = std::function<void(const std::string& reason)>;
  int add_hook(Hook hook) const;
  // Once it returns, the hook is neither running nor going to run.
  void remove_hook(int id) const;

 private:
  Fd fd_;
  std::atomic<bool> cancelled_{false};
  mutable Mutex mutex_;  // hooks run under it, so remove_hook() waits for a running one
  std::string reason_ GUARDED_BY(mutex_);
  mutable std::map<int, Hook> hooks_ GUARDED_BY(mutex_);
  mutable int next_hook_ GUARDED_BY(mutex_) = 0;
};

// Keeps a hook registered for the lifetime of a scope; does nothing without a cancellation.
class CancelHook {
 public:
  CancelHook(const Cancellation* cancel, Cancellation::Hook hook)
      : cancel_(cancel), id_(cancel ? cancel->add_hook(std::move(hook)) : -1) {}
  ~CancelHook() {
    if (cancel_) cancel_->remove_hook(id_);
  }
  CancelHook(const CancelHook&) = delete;
  CancelHook& operator=(const CancelHook&) = delete;

 private:
  const Cancellation* cancel_;
  int id_;
};

// For waits that take an optional cancellation: its fd, or -1 (poll ignores negative fds).
inline int cancel_fd(const Cancellation* c) {
  return c ? c->fd() : -1;
}

// For waits that take an optional cancellation: throws once it is given and fired.
inline void throw_if_cancelled(const Cancellation* c) {
  if (c) c->throw_if_cancelled();
}

}  // namespace cohort
