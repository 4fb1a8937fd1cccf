// A connection to the launcher's rendezvous server (RendezvousServer): the Store that workers
// use, reached over TCP with every request signed by the job secret.
#pragma once

#include <chrono>
#include <string>

#include "base/cancellation.h"
#include "base/fd.h"
#include "base/mutex.h"
#include "rendezvous/protocol.h"
#include "rendezvous/store.h"

namespace cohort::rendezvous {

// Thread-safe: requests from several threads take turns on the one connection.
class RendezvousClient final : public Store {
 public:
  // `secret` is the raw 32-byte key (COHORT_SECRET decoded from hex). `timeout` bounds connecting
  // and each request's I/O. `scope` namespaces every key (elastic mode: one scope per round).
  // Connects lazily, on the first request. A request that fails on the way (the connection is
  // refused, reset or closed: a busy or restarting server) is sent again on a new connection
  // until `timeout` (+ the GET's wait) has passed since it was first sent; the same request twice
  // does no harm. An unauthentic answer is never retried.
  // `clock_skew` is added to every timestamp sent (COHORT_FAULT_CLOCK_SKEW_SECONDS, tests only).
  // A server that refuses the timestamps as stale (kStale) makes every request throw
  // ClockSkewRefused at once, saying by how much the clocks differ.
  RendezvousClient(std::string host, int port, std::string secret,
                   std::chrono::milliseconds timeout, std::string scope = "",
                   std::chrono::seconds clock_skew = {});

  // Store's operations; the server waits for get(), the client does not poll.
  void set(const std::string& key, const std::string& value,
           const Cancellation* cancel = nullptr) override;
  std::string get(const std::string& key, std::chrono::milliseconds wait,
                  const Cancellation* cancel = nullptr) override;
  std::optional<std::string> lookup(const std::string& key,
                                    const Cancellation* cancel = nullptr) override;
  bool compare_and_set(const std::string& key, const std::optional<std::string>& expected,
                       const std::string& desired, const Cancellation* cancel = nullptr) override;
  bool remove(const std::string& key, const Cancellation* cancel = nullptr) override;
  std::string describe() const override { return "rendezvous server " + address(); }

  std::string address() const { return host_ + ":" + std::to_string(port_); }

 private:
  RendezvousResponse call(RendezvousRequest request, std::chrono::milliseconds extra_wait,
                          const Cancellation* cancel);
  RendezvousResponse exchange(const RendezvousRequest& request, std::chrono::milliseconds wait,
                              const Cancellation* cancel) REQUIRES(mutex_);

  std::string host_;
  int port_;
  std::string secret_;
  std::chrono::milliseconds timeout_;
  std::string scope_;
  int64_t skew_ms_;
  Mutex mutex_;  // one request at a time on the connection
  Fd fd_ GUARDED_BY(mutex_);
};

}  // namespace cohort::rendezvous
