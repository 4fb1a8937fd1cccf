// A worker's connection to cohortrun's rendezvous server, and a gloo::rendezvous::Store on top
// of it so Gloo can build its connections through the authenticated server.
//
//   RendezvousClient client(addr, port, secret_bytes, 30s);   // from COHORT_RENDEZVOUS_*/SECRET
//   RendezvousStore store(client, 30s);
//   gloo::rendezvous::PrefixStore prefixed("global", store);
//   context->connectFullMesh(prefixed, device);
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <mutex>
#include <string>

#include "base/cancellation.h"
#include "base/fd.h"
#include "discovery/rendezvous_protocol.h"

namespace cohort::discovery {

// Thread-safe: requests from several threads take turns on the one connection.
class RendezvousClient {
 public:
  // `secret` is the raw 32-byte key (COHORT_SECRET decoded from hex). `timeout` bounds connecting
  // and each request's I/O. `scope` namespaces every key (elastic mode: one scope per round).
  // Connects lazily, on the first request. A request that fails on the way (the connection is
  // refused, reset or closed: a busy or restarting server) is sent again on a new connection
  // until `timeout` (+ the GET's wait) has passed since it was first sent; the same request twice
  // does no harm. An unauthentic answer is never retried.
  RendezvousClient(std::string host, int port, std::string secret,
                   std::chrono::milliseconds timeout, std::string scope = "");

  // Throw cohort::Error naming the server on failure; get throws RendezvousTimeout when `key`
  // is not set within `wait` (the server waits, the client does not poll). With `cancel`, a
  // cancellation ends the request at once with InternalError carrying its reason.
  void set(const std::string& key, const std::string& value, const Cancellation* cancel = nullptr);
  std::string get(const std::string& key, std::chrono::milliseconds wait,
                  const Cancellation* cancel = nullptr);

  std::string address() const { return host_ + ":" + std::to_string(port_); }

 private:
  RendezvousResponse call(RendezvousRequest request, std::chrono::milliseconds extra_wait,
                          const Cancellation* cancel);
  RendezvousResponse exchange(const RendezvousRequest& request, std::chrono::milliseconds wait,
                              const Cancellation* cancel);

  std::string host_;
  int port_;
  std::string secret_;
  std::chrono::milliseconds timeout_;
  std::string scope_;
  std::mutex mutex_;  // one request at a time on the connection
  Fd fd_;
};

// gloo's Store interface over a RendezvousClient, which must outlive it. get() and wait() wait
// at most `timeout` (wait(keys, timeout) uses its own) and then throw RendezvousTimeout; with
// `cancel` (which must outlive it too) every call ends at once when it fires.
class RendezvousStore : public gloo::rendezvous::Store {
 public:
  RendezvousStore(RendezvousClient& client, std::chrono::milliseconds timeout,
                  const Cancellation* cancel = nullptr)
      : client_(client), timeout_(timeout), cancel_(cancel) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  RendezvousClient& client_;
  std::chrono::milliseconds timeout_;
  const Cancellation* cancel_;
};

}  // namespace cohort::discovery
