// The key-value store through which a job's workers find each other, run inside cohortrun.
// Every request must be signed with the job's secret (see rendezvous_protocol.h); a GET waits on
// the server until its key is set or its deadline passes, so clients never poll.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/fd.h"
#include "discovery/rendezvous_protocol.h"

namespace cohort::discovery {

class RendezvousServer {
 public:
  // Listens on `host` at an ephemeral port and serves until stop() or destruction.
  RendezvousServer(const std::string& host, std::string secret);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  int port() const { return port_; }
  // Wakes every waiting request and closes every connection.
  void stop();

  // For tests and logs: how many requests were rejected, and whether `key` is set.
  int rejected() const;
  bool contains(const std::string& key) const;

 private:
  static constexpr int kMaxConnections = 4096;
  // How long a GET may wait, whatever the client asks.
  static constexpr int64_t kMaxGetWaitMs = 10 * 60 * 1000;

  void accept_loop();
  void serve(int fd, std::string peer);
  RendezvousResponse handle(const RendezvousRequest& request);
  // Throws RendezvousRejected for a stale or replayed request; remembers its nonce otherwise.
  void check_fresh(const RendezvousRequest& request);

  std::string secret_;
  int port_ = 0;
  Fd listener_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::map<std::string, std::string> values_;
  std::unordered_map<std::string, int64_t> seen_nonces_;  // nonce -> timestamp
  int rejected_ = 0;
  std::set<int> open_fds_;

  std::thread acceptor_;
  std::vector<std::thread> connections_;
};

}  // namespace cohort::discovery
