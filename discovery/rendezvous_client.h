// A worker's connection to cohortrun's rendezvous server, and a gloo::rendezvous::Store on top
// of it so Gloo can build its connections through the authenticated server.
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <mutex>
#include <string>

#include "core/fd.h"
#include "discovery/rendezvous_protocol.h"

namespace cohort::discovery {

class RendezvousClient {
 public:
  // `timeout` bounds connecting and each request's I/O.
  RendezvousClient(std::string host, int port, std::string secret,
                   std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::string& value);
  // Waits on the server until `key` is set; throws cohort::Error after `wait`.
  std::string get(const std::string& key, std::chrono::milliseconds wait);

 private:
  RendezvousResponse call(RendezvousRequest request, std::chrono::milliseconds extra_wait);

  std::string host_;
  int port_;
  std::string secret_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;  // one request at a time on the connection
  Fd fd_;
};

class RendezvousStore : public gloo::rendezvous::Store {
 public:
  RendezvousStore(RendezvousClient& client, std::chrono::milliseconds timeout)
      : client_(client), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  RendezvousClient& client_;
  std::chrono::milliseconds timeout_;
};

}  // namespace cohort::discovery
