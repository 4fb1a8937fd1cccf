// The key-value store through which a job's workers find each other, run inside cohortrun.
// Every request must be signed with the job's secret (see rendezvous_protocol.h); a GET waits on
// the server until its key is set or its deadline passes, so clients never poll.
//
// One thread serves every connection (server_loop.h: epoll, non-blocking sockets, each
// connection's buffers and deadline its own): a round of thousands of workers costs descriptors
// and a few hundred bytes each, not thousands of threads. A GET whose key is not set is parked
// on its key and answered when a SET (a client's or the launcher's) sets it, or at its deadline.
//
// Unauthenticated peers cannot starve authenticated ones (the port listens on every interface in
// elastic mode). A new connection waits in a lobby until it sends a signed frame header
// (frame_io.h): it holds no buffer beyond that header's fixed size, must send it within
// auth_timeout, and the lobby holds a bounded number of such connections (per source address and
// in all), dropping the oldest to make room for a new one. A connection whose header proves the
// secret is served, up to max_connections. A slow or hostile client holds only its own
// connection's state: the loop never blocks on a socket, and every frame, answer and first
// header is bounded by its timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "rendezvous/frame_io.h"
#include "rendezvous/protocol.h"
#include "rendezvous/store.h"

namespace cohort::rendezvous {

class ServerLoop;

struct RendezvousServerOptions {
  // The longest a GET may wait on the server, whatever the client asks.
  std::chrono::milliseconds max_get_wait{std::chrono::minutes(10)};
  // How long an authenticated frame may take to arrive whole, and an answer to be taken.
  std::chrono::milliseconds frame_timeout{std::chrono::seconds(10)};
  // How long a new connection may take to send its first signed frame header, proving the secret.
  std::chrono::milliseconds auth_timeout{std::chrono::seconds(2)};
  // Authenticated connections served at once; more are refused. A worker holds up to four (its
  // check-in, host notices, round watch and Gloo store): 4,096 workers fit. Each costs a
  // descriptor: the server raises RLIMIT_NOFILE towards its hard limit for these and the lobby,
  // and an accept that finds none left is logged naming RLIMIT_NOFILE.
  int max_connections = 16384;
  // Unauthenticated connections held at once, in all and per source address; past either limit
  // the oldest one (of that address first) is dropped to make room for the newest. A worker's
  // connection stays here only until its first write: 16 hold the burst of a host starting 8
  // workers (two connections each), 4,096 such bursts from 256 hosts at once (docs/cohortrun.md).
  // A flood from one address only ever pushes out its own.
  int max_unauthenticated = 4096;
  int max_unauthenticated_per_address = 16;
  // Called after a client's request changed a key (a SET, a compare-and-set that matched, a
  // REMOVE), before the client gets its answer, on the server's thread and outside the server's
  // lock (so it may call the server). Elastic mode uses it to learn which worker checked in.
  // Must not block.
  std::function<void(const std::string& scope, const std::string& key)> on_set;
};

class RendezvousServer {
 public:
  // Listens on `host` at an ephemeral port and serves until stop() or destruction. Throws
  // InvalidArgument for limits below 1.
  RendezvousServer(const std::string& host, std::string secret,
                   RendezvousServerOptions options = {});
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  int port() const { return port_; }
  // Answers every parked GET "stopping", closes every connection and refuses new ones.
  void stop();
  // Forgets every key of `scope` (elastic mode: a finished round).
  void clear_scope(const std::string& scope);
  // The launcher's own access to the store, without a connection, as a Store over one scope.
  // Its set() wakes the GETs waiting for the key (on_set is for clients' SETs and is not called).
  // The server must outlive it.
  std::unique_ptr<Store> store(std::string scope);
  // The same, one call at a time (Store's meanings; `get` waits in this process).
  void set(const std::string& key, const std::string& value, const std::string& scope = "");
  std::optional<std::string> lookup(const std::string& key, const std::string& scope = "") const;
  std::string get(const std::string& key, const std::string& scope, std::chrono::milliseconds wait,
                  const Cancellation* cancel = nullptr);
  bool compare_and_set(const std::string& key, const std::optional<std::string>& expected,
                       const std::string& desired, const std::string& scope = "");
  bool remove(const std::string& key, const std::string& scope = "");

  // For tests and logs: rejected requests and connections dropped before they authenticated, so
  // far; and whether `key` is set in `scope`.
  int rejected() const;
  // For tests: unauthenticated connections held now, and authenticated ones being served.
  int unauthenticated() const { return unauthenticated_.load(); }
  int authenticated() const;
  // For tests: blocks until rejected() >= n; false after `timeout`.
  bool await_rejected(int n, std::chrono::milliseconds timeout) const;
  // For tests: waits until at most `n` authenticated connections are open; false on timeout.
  bool await_authenticated_at_most(int n, std::chrono::milliseconds timeout) const;
  bool contains(const std::string& key, const std::string& scope = "") const;
  // For tests: blocks until `n` GETs are waiting on the server; false after `timeout`.
  bool await_waiting_gets(int n, std::chrono::milliseconds timeout) const;

 private:
  friend class ServerLoop;
  using Scope = std::map<std::string, std::string>;

  // For the loop (server_loop.cc). What a request does to the store, and its answer; nullopt for
  // a GET whose key is not set yet, which the loop parks as connection `connection`.
  std::optional<RendezvousResponse> handle(const RendezvousRequest& request, int64_t connection);
  // A parked GET's answer once its key is set, or its timeout answer once `expired`; nullopt
  // while it should stay parked. Unparks it when it answers.
  std::optional<RendezvousResponse> answer_parked(const RendezvousRequest& request,
                                                  int64_t connection, bool expired);
  // Forgets a parked GET whose connection closed.
  void unpark(const RendezvousRequest& request, int64_t connection);
  // Connections whose parked GET's key was set since the last call.
  std::vector<int64_t> take_woken();
  // The loop's counts, for the test helpers.
  void count_authenticated(int delta);
  void reject(const std::string& peer, const std::string& reason);
  // Throws RendezvousRejected for a stale or replayed request or header (`what`); remembers its
  // nonce otherwise.
  void check_fresh(int64_t timestamp_ms, const std::string& nonce, const std::string& what);
  bool stopping() const;

  std::optional<std::string> find_locked(const std::string& scope, const std::string& key) const
      REQUIRES(mutex_);
  void set_locked(const std::string& scope, const std::string& key, const std::string& value)
      REQUIRES(mutex_);
  bool compare_and_set_locked(const RendezvousRequest& request) REQUIRES(mutex_);
  bool remove_locked(const std::string& scope, const std::string& key) REQUIRES(mutex_);
  RendezvousResponse get_timeout(const RendezvousRequest& request) const;

  std::string secret_;
  RendezvousServerOptions options_;
  int port_ = 0;
  std::atomic<int> unauthenticated_{0};

  mutable Mutex mutex_;
  mutable CondVar changed_;  // a key was set, a GET was parked, a count changed, or stop
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::map<std::string, Scope> scopes_ GUARDED_BY(mutex_);
  std::unordered_map<std::string, int64_t> seen_nonces_ GUARDED_BY(mutex_);  // nonce -> timestamp
  int rejected_ GUARDED_BY(mutex_) = 0;
  int authenticated_ GUARDED_BY(mutex_) = 0;
  int waiting_gets_ GUARDED_BY(mutex_) = 0;
  int64_t nonces_swept_at_ GUARDED_BY(mutex_) = 0;  // unix ms
  // Parked GETs: scope '\0' key -> the connections waiting for it; and those whose key was set,
  // for the loop to answer.
  std::unordered_map<std::string, std::vector<int64_t>> parked_ GUARDED_BY(mutex_);
  std::vector<int64_t> woken_ GUARDED_BY(mutex_);

  std::unique_ptr<ServerLoop> loop_;  // set before the thread starts, never after
  std::thread thread_;
};

}  // namespace cohort::rendezvous
