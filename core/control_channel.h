// The coordination engine's own message channel: a TCP star between rank 0 and every other rank,
// used for requests and responses (the data itself moves over Gloo or MPI).
//
// Why not negotiate over the backend like Horovod: a blocking Open MPI call spins a core, and a
// Gloo wait cannot be woken by a local submission. Here the background thread sleeps in epoll on
// its sockets and an eventfd, so an idle runtime costs nothing, a new request is sent the moment
// it is submitted, and a peer that dies is seen at once as a closed socket.
//
// Rank 0 holds a connection per rank, so a wake-up must cost what is ready, not N: every
// connection is registered once, when it is accepted, in an edge-triggered epoll set (EPOLLIN,
// EPOLLOUT, EPOLLRDHUP) and never modified. Edge-triggered because a socket's readiness then
// needs no bookkeeping: a socket that cannot take all of a message raises its EPOLLOUT edge once it
// has room, with no epoll_ctl to ask for it and none to stop asking. The price is that whoever
// hears an edge drains it: a read goes on until EAGAIN, a write until the queue is empty or the
// socket is full. One wait() takes every event that is ready (the buffer has a slot per
// connection). Peers are indexed by rank, so send() finds its peer in O(1), and a broken
// connection is counted, so wait() looks for it only when there is one.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/epoll_set.h"
#include "base/fd.h"
#include "base/spin_policy.h"
#include "core/control_ring.h"
#include "ops/shm_segment.h"

namespace cohort {

class Cancellation;

struct ControlMessage {
  int peer;
  std::vector<std::byte> payload;
};

class ControlChannel {
 public:
  // A world of one: no peers, only wake().
  static ControlChannel alone();
  // Rank 0, step 1: listen on `host` (an ephemeral port). address() is what workers connect to.
  // `label` names the channel in errors ("control", "heartbeat").
  // Raises the soft RLIMIT_NOFILE to the hard limit when the star's descriptors need it; throws
  // InvalidArgument naming the limit when even the hard one is too low (nothing is opened then).
  // `connections`: how many ranks will connect, where not every other rank (a host leader's).
  static ControlChannel listen(const std::string& host, int size, std::string token,
                               std::string label = "control", int connections = -1);
  std::string address() const;
  // The job token a worker's hello must carry (rank 0 publishes it beside the address).
  const std::string& token() const { return token_; }
  // Rank 0, step 2: accept one authenticated connection from every other rank within `timeout`.
  // Connections are served concurrently: each must send a valid hello (its rank and the job
  // token) within kHelloTimeout (or `timeout`, if shorter), or it is dropped with a rate-limited
  // warning naming its address; so are wrong tokens and ranks. A hello is read into a fixed
  // kMaxHello-byte buffer, and at most size + kMaxPendingExtra connections wait for theirs (the
  // oldest is dropped first), so strays cost neither time, memory nor the job. Throws
  // InternalError on timeout, naming the missing ranks, or with `cancel`'s reason once it fires.
  void accept_workers(std::chrono::milliseconds timeout, const Cancellation* cancel = nullptr);

  // Any other rank: connect to rank 0 at `address` and introduce ourselves. Connecting (retried
  // while refused: rank 0 may not listen yet) and sending the hello end within `timeout`, or at
  // once with `cancel`'s reason once it fires; both as InternalError.
  // With COHORT_CONTROL_LEADERS a rank connects to its host's leader instead: `to` names it.
  static ControlChannel connect(int rank, int size, const std::string& address,
                                const std::string& token, std::chrono::milliseconds timeout,
                                std::string label = "control", const Cancellation* cancel = nullptr,
                                int to = 0);

  // Host leaders (COHORT_CONTROL_LEADERS, core/leader.h). A leader listens like rank 0, then,
  // before accept_workers, expects only its host's ranks, and opens its own connection to rank 0
  // at `address` (the same bounds and errors as connect()); rank 0 expects the other leaders and
  // its own host's ranks. Messages from rank 0 then arrive as peer 0 beside the host's ranks'.
  void expect(const std::vector<int>& ranks);
  void connect_up(int rank, const std::string& address, const std::string& token,
                  std::chrono::milliseconds timeout, const Cancellation* cancel = nullptr);
  // How errors name the connection to `rank` ("rank 3" unless named, e.g. as a host's leader).
  void name_peer(int rank, std::string name);

  // Ranks on one host, once connected: every message travels through a pair of rings per peer in
  // `segment` (rings_bytes(size) bytes, the same segment on every rank), and the connections only
  // ring doorbells and tell when a peer is gone. wait() first looks at the rings for up to `spin`
  // (when the timeout allows), as a message from a peer on another core is often microseconds
  // away, and waking from sleep costs tens of them.
  static size_t rings_bytes(int size);
  void use_rings(ops::ShmSegment segment, std::chrono::microseconds spin);

  static constexpr std::chrono::milliseconds kHelloTimeout{2000};
  static constexpr size_t kMaxHello = 256;
  static constexpr size_t kMaxPendingExtra = 64;

  ControlChannel() = default;  // not connected: send() fails, wake() does nothing
  ControlChannel(ControlChannel&&) noexcept = default;
  ControlChannel& operator=(ControlChannel&&) noexcept = default;
  ~ControlChannel() = default;

  // Queues a message for `peer` and writes as much as the socket takes without blocking; the
  // rest is written by later wait() calls. Allocates nothing once the peer's queue has grown to
  // the size of its messages.
  void send(int peer, std::span<const std::byte> payload);
  // Sleeps until messages arrive, wake() is called, or `timeout` passes; returns the messages
  // (possibly none). Throws InternalError when a peer's connection breaks.
  std::vector<ControlMessage> wait(std::chrono::microseconds timeout);
  // Writes all queued messages, waiting at most `timeout`; throws InternalError if it cannot.
  void flush(std::chrono::milliseconds timeout);
  // Thread-safe: makes the current or next wait() return.
  void wake();
  // Closes every peer connection at once, so peers learn of a failure without waiting out a
  // timeout. wake() keeps working.
  void close_peers();
  // Closes the connection to `rank` and forgets it: a peer that said goodbye, whose closing
  // connection is no failure.
  void drop(int rank);

 private:
  struct Rings {
    ControlRing in, out;
  };
  struct Peer {
    int rank = -1;
    Fd fd;
    std::optional<Rings> rings;  // use_rings(): the messages' way; fd then carries doorbells
    std::vector<std::byte> in;   // bytes received, not yet a whole frame
    std::vector<std::byte> out;  // bytes queued, not yet written
    std::string broken;          // why the connection ended, once it has
    std::string name;            // name_peer(): how errors name it, if not "rank N"
  };

  struct Hello;  // a connection accepted, its hello not read yet
  // Reads what `h` has sent; true once it is done with (taken as a rank's, or dropped).
  bool read_hello(Hello& h, int& connected);
  // Accepts what is waiting; false when accepting failed and should pause.
  bool accept_batch(std::vector<Hello>& pending, std::chrono::milliseconds hello_timeout,
                    int& connected);
  std::string missing_ranks() const;
  static Fd open_connection(int rank, int to, const std::string& address, const std::string& token,
                            std::chrono::milliseconds timeout, const std::string& label,
                            const Cancellation* cancel);
  int expected_count() const;
  bool expected(int rank) const;
  size_t index_of(int rank) const;
  static std::string who(const Peer& p);

  static constexpr uint64_t kWakeTag = ~uint64_t{0};  // the eventfd's tag; a peer's is its index
  // The eventfd and the epoll set that watches it.
  void open_events();
  // Registers peers_[index]'s connection, once it is open.
  void watch(size_t index);
  // Closes `p`'s connection (out of the epoll set first).
  void close_connection(Peer& p);
  // What an epoll event says about a peer: written, read, and its messages taken.
  void serve(Peer& p, uint32_t events, std::vector<ControlMessage>& messages);
  Peer& peer(int rank);
  void write_some(Peer& p);
  void write_ring(Peer& p);
  // What the socket has: a message's bytes, or a ring peer's doorbells (which only wake). Reads
  // until EAGAIN `to_the_end`, else until a read comes back short (all an edge asks for).
  void read_socket(Peer& p, bool to_the_end);
  void read_ring(Peer& p);
  void take_messages(Peer& p, std::vector<ControlMessage>& messages);
  static void ring_doorbell(Peer& p);
  // Until a ring can be read or written, wake() is called, or `limit` passes; false then, and
  // false at once when spin_policy_ says that spinning has stopped paying.
  bool spin_for_rings(std::chrono::microseconds limit);
  // Whether a ring can be read or written, or wake() was called (which it consumes).
  bool rings_ready();
  // Tells the ring peers this rank sleeps; false if something is ready already.
  bool rings_sleep();
  void rings_awake();
  void clear_wake();
  void throw_if_broken() const;

  int size_ = 0;
  int rank_ = 0;
  std::string label_ = "control";
  std::string token_;
  Fd listener_;
  std::string address_;
  Fd wake_fd_;
  EpollSet epoll_;  // wake_fd_ and every peer's connection
  // Set by wake() beside the eventfd, for spin_for_rings (shared: the channel moves).
  std::shared_ptr<std::atomic<bool>> woken_ = std::make_shared<std::atomic<bool>>(false);
  std::vector<Peer> peers_;     // listened (rank 0, a leader): indexed by rank; else its peer alone
  std::vector<bool> expected_;  // expect(): the ranks accept_workers waits for; empty: all
  int broken_ = 0;              // peers whose connection ended (Peer::broken), not dropped
  std::vector<size_t> ring_peers_;  // indices in peers_ of the peers with rings
  std::optional<ops::ShmSegment> rings_segment_;
  std::chrono::microseconds spin_{0};
  SpinPolicy spin_policy_;  // used by the thread that waits (the background thread)
};

}  // namespace cohort
