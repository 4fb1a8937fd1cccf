// The rendezvous server's event loop (server.h): one thread, one epoll set, every socket
// non-blocking. Each connection holds its own buffers and at most one deadline, kept in one
// ordered set: its first header in the lobby (auth_timeout), a frame under way or an answer not
// yet taken (frame_timeout), or its parked GET (the GET's wait). The store, the parked GETs and
// the replay check are the server's, under its lock; the connections are this thread's alone.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/fd.h"
#include "rendezvous/server.h"

namespace cohort::rendezvous {

class ServerLoop {
 public:
  // Listens on `host` (an ephemeral port) and raises RLIMIT_NOFILE for `options`' limits.
  ServerLoop(RendezvousServer& server, const std::string& host,
             const RendezvousServerOptions& options);
  int port() const { return port_; }
  // The server's thread: serves until stop().
  void run();
  // From any thread: the loop looks at the GETs whose key was set.
  void wake();
  // From any thread: new connections are refused at once, the loop ends.
  void stop();

 private:
  enum class Phase { kLobby, kIdle, kFrame, kParked, kWriting };
  struct Connection {
    Fd fd;
    std::string peer;     // address:port, for logs
    std::string address;  // address alone, for the lobby's per-address limit
    Phase phase = Phase::kLobby;
    bool payload = false;  // kLobby and kFrame: reading the payload (else a header)
    std::string in;        // what has arrived of the header or payload
    size_t want = kSignedHeaderSize;
    SignedHeader header;        // once read
    RendezvousRequest request;  // kParked: the GET waiting
    std::string out;            // kWriting: the answer's frame, `sent` bytes of it gone
    size_t sent = 0;
    bool close_after_write = false;
    bool authenticated = false;  // counted in the server's authenticated()
    Clock::time_point deadline = Clock::time_point::max();
  };
  using Id = int64_t;

  void on_event(Id id, uint32_t events);
  void accept_batch();
  bool accept_one();
  void admit(Fd fd, const std::string& address, int port);
  void make_room(const std::string& address);
  // Reads what the connection sent and acts on each whole header or payload.
  void read_ready(Id id);
  void closed_by_peer(Id id, Connection& c, const std::string& error);
  void on_header(Id id, Connection& c);
  void on_payload(Id id, Connection& c);
  void expect_header(Connection& c);
  void answer(Id id, Connection& c, const RendezvousResponse& response);
  void flush(Id id, Connection& c);
  void answer_woken();
  void expire(Clock::time_point now);
  void on_deadline(Id id, Connection& c);
  void set_deadline(Id id, Connection& c, Clock::time_point deadline);
  void watch(Id id, const Connection& c, uint32_t events);
  void leave_lobby(Id id, const Connection& c);
  void drop(Id id, const std::string& reason);
  void close(Id id);
  int wait_millis() const;
  void shut_down();

  RendezvousServer& server_;
  const RendezvousServerOptions& options_;
  int port_ = 0;
  Fd listener_;
  Fd epoll_;
  Fd wake_;         // an eventfd: stop() and the launcher's SETs wake the loop through it
  Id next_id_ = 2;  // 0: the listener, 1: wake_
  std::unordered_map<Id, Connection> connections_;
  std::set<std::pair<Clock::time_point, Id>> deadlines_;
  std::set<Id> lobby_;  // ids grow with each accept: the first is the oldest
  std::unordered_map<std::string, std::set<Id>> lobby_by_address_;
  Clock::time_point paused_until_ = Clock::time_point::min();  // out of descriptors: not accepting
};

}  // namespace cohort::rendezvous
