// The key-value store through which a job's workers find each other, run inside cohortrun.
// Every request must be signed with the job's secret (see rendezvous_protocol.h); a GET waits on
// the server until its key is set or its deadline passes, so clients never poll.
//
// Unauthenticated peers cannot starve authenticated ones (the port listens on every interface in
// elastic mode). A new connection waits in a lobby, served by the accepting thread alone, until it
// sends a signed frame header (frame_io.h): it holds no thread and no buffer beyond that header's
// fixed size, must send it within auth_timeout, and the lobby holds a few such connections (per
// source address and in all), dropping the oldest to make room for a new one. A connection whose
// header proves the secret gets a thread of its own, up to max_connections: a slow or hostile
// client only ever holds its own thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/fd.h"
#include "base/mutex.h"
#include "rendezvous/frame_io.h"
#include "rendezvous/protocol.h"
#include "rendezvous/store.h"

namespace cohort::rendezvous {

struct RendezvousServerOptions {
  // The longest a GET may wait on the server, whatever the client asks.
  std::chrono::milliseconds max_get_wait{std::chrono::minutes(10)};
  // How long an authenticated frame may take to arrive whole, and an answer to be taken.
  std::chrono::milliseconds frame_timeout{std::chrono::seconds(10)};
  // How long a new connection may take to send its first signed frame header, proving the secret.
  std::chrono::milliseconds auth_timeout{std::chrono::seconds(2)};
  // Authenticated connections served at once (one thread each); more are refused.
  int max_connections = 1024;
  // Unauthenticated connections held at once, in all and per source address; past either limit
  // the oldest one (of that address first) is dropped to make room for the newest.
  int max_unauthenticated = 64;
  int max_unauthenticated_per_address = 16;
  // Called after a client's request changed a key (a SET, a compare-and-set that matched, a
  // REMOVE), before the client gets its answer, on the
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
  using Scope = std::map<std::string, std::string>;

  // A connection that has not proved the secret yet: what it has sent of its first header.
  struct Pending {
    Fd fd;
    std::string peer;     // address:port, for logs
    std::string address;  // address alone, for the per-address limit
    std::chrono::steady_clock::time_point deadline;
    std::array<char, kSignedHeaderSize> header{};
    size_t got = 0;
    bool done = false;  // handed over, rejected or closed: to be forgotten
  };

  // The accepting thread: accepts, reads first headers, drops whoever is late or over a limit.
  void lobby_loop();
  // Accepts what is waiting; false when accepting failed and should pause.
  bool accept_batch(std::vector<Pending>& pending);
  // Reads what `p` has sent; true once it is done with (handed to a thread, rejected or closed).
  bool progress(Pending& p);
  void make_room(std::vector<Pending>& pending, const std::string& address);
  void start_serving(Fd fd, const std::string& peer, SignedHeader first);
  void join_finished();
  void serve(int fd, const std::string& peer, SignedHeader first);
  void serve_frames(int fd, SignedHeader header);
  void reject(const std::string& peer, const std::string& reason);
  RendezvousResponse handle(const RendezvousRequest& request);
  RendezvousResponse handle_get(const RendezvousRequest& request) REQUIRES(mutex_);
  // Under mutex_: the key's value, if set; the store operations that change keys.
  std::optional<std::string> find_locked(const std::string& scope, const std::string& key) const
      REQUIRES(mutex_);
  void set_locked(const std::string& scope, const std::string& key, const std::string& value)
      REQUIRES(mutex_);
  bool compare_and_set_locked(const RendezvousRequest& request) REQUIRES(mutex_);
  bool remove_locked(const std::string& scope, const std::string& key) REQUIRES(mutex_);
  // Throws RendezvousRejected for a stale or replayed request or header (`what`); remembers its
  // nonce otherwise.
  void check_fresh(int64_t timestamp_ms, const std::string& nonce, const std::string& what);
  // Tells a client whose first header is authentic but stale why it is refused (kStale).
  void answer_stale(int fd, const SignedHeader& header, const std::string& why) const;

  std::string secret_;
  RendezvousServerOptions options_;
  int port_ = 0;
  Fd listener_;
  Fd wake_;  // an eventfd: stop() wakes the lobby through it
  std::atomic<int> unauthenticated_{0};

  mutable Mutex mutex_;
  mutable CondVar changed_;  // a key was set, a GET started waiting, or stop
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::map<std::string, Scope> scopes_ GUARDED_BY(mutex_);
  std::unordered_map<std::string, int64_t> seen_nonces_ GUARDED_BY(mutex_);  // nonce -> timestamp
  int rejected_ GUARDED_BY(mutex_) = 0;
  int waiting_gets_ GUARDED_BY(mutex_) = 0;
  int next_connection_ GUARDED_BY(mutex_) = 0;
  // id -> (fd, thread)
  std::map<int, std::pair<int, std::thread>> connections_ GUARDED_BY(mutex_);
  std::vector<int> finished_ GUARDED_BY(mutex_);  // ids whose thread is about to end

  std::thread acceptor_;
};

}  // namespace cohort::rendezvous
