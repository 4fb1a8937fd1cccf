// The key-value store through which a job's workers find each other, run inside cohortrun.
// Every request must be signed with the job's secret (see rendezvous_protocol.h); a GET waits on
// the server until its key is set or its deadline passes, so clients never poll. One thread per
// connection, up to a limit: a slow or hostile client only ever holds its own thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/fd.h"
#include "discovery/rendezvous_protocol.h"

namespace cohort::discovery {

struct RendezvousServerOptions {
  // The longest a GET may wait on the server, whatever the client asks.
  std::chrono::milliseconds max_get_wait{std::chrono::minutes(10)};
  // How long a new connection may take to send its first frame, and any frame to arrive whole.
  std::chrono::milliseconds frame_timeout{std::chrono::seconds(10)};
  int max_connections = 1024;
  // Called after a client's SET has been stored, before the client gets its answer, on the
  // connection's thread and outside the server's lock (so it may call the server). Elastic mode
  // uses it to wake its event loop when a worker checks in. Must not block.
  std::function<void(const std::string& scope, const std::string& key)> on_set;
};

class RendezvousServer {
 public:
  // Listens on `host` at an ephemeral port and serves until stop() or destruction.
  RendezvousServer(const std::string& host, std::string secret,
                   RendezvousServerOptions options = {});
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  int port() const { return port_; }
  // Wakes every waiting request and closes every connection.
  void stop();
  // Forgets every key of `scope` (elastic mode: a finished round).
  void clear_scope(const std::string& scope);
  // The launcher's own access to the store, without a connection: set() wakes the GETs waiting
  // for `key` (on_set is for clients' SETs and is not called); lookup() never waits.
  void set(const std::string& key, const std::string& value, const std::string& scope = "");
  std::optional<std::string> lookup(const std::string& key, const std::string& scope = "") const;

  // For tests and logs: rejected requests so far, and whether `key` is set in `scope`.
  int rejected() const;
  bool contains(const std::string& key, const std::string& scope = "") const;
  // For tests: blocks until `n` GETs are waiting on the server; false after `timeout`.
  bool await_waiting_gets(int n, std::chrono::milliseconds timeout) const;

 private:
  using Scope = std::map<std::string, std::string>;

  void accept_loop();
  void join_finished();
  void serve(int fd, const std::string& peer);
  void serve_frames(int fd, const std::string& peer);
  void reject(const std::string& peer, const std::string& reason);
  RendezvousResponse handle(const RendezvousRequest& request);
  RendezvousResponse handle_get(const RendezvousRequest& request,
                                std::unique_lock<std::mutex>& lock);
  // Throws RendezvousRejected for a stale or replayed request; remembers its nonce otherwise.
  void check_fresh(const RendezvousRequest& request);

  std::string secret_;
  RendezvousServerOptions options_;
  int port_ = 0;
  Fd listener_;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;  // a key was set, a GET started waiting, or stop
  bool stopping_ = false;
  std::map<std::string, Scope> scopes_;
  std::unordered_map<std::string, int64_t> seen_nonces_;  // nonce -> timestamp
  int rejected_ = 0;
  int waiting_gets_ = 0;
  int next_connection_ = 0;
  std::map<int, std::pair<int, std::thread>> connections_;  // id -> (fd, thread)
  std::vector<int> finished_;                               // ids whose thread is about to end

  std::thread acceptor_;
};

}  // namespace cohort::discovery
