#include "core/control_channel.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "base/cancellation.h"
#include "base/fd_limit.h"
#include "base/framed_socket.h"
#include "base/log.h"
#include "base/net.h"
#include "cohort/errors.h"
#include "core/control_hello.h"

namespace cohort {
namespace {

using std::chrono::milliseconds;

// Control frames are request and response lists; nothing legitimate comes near this.
constexpr uint32_t kMaxFrame = 64u << 20;

std::string errno_text() {
  return std::strerror(errno);
}

// The control channel is the runtime's transport: it reports every failure as InternalError, the
// one elastic::run recovers from. A cancellation's InternalError passes as it is.
template <typename F>
auto as_internal(const std::string& context, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    throw InternalError(context + ": " + e.what());
  }
}

// Polls `fds` beside the cancellation until one is ready or `deadline`; false on timeout.
bool poll_until(std::vector<pollfd>& fds, SteadyClock::time_point deadline,
                const Cancellation* cancel = nullptr) {
  return as_internal("poll failed", [&] { return net::poll_until(fds, deadline, cancel); });
}

Fd make_wake_fd() {
  Fd fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!fd.valid()) throw InternalError("eventfd failed: " + errno_text());
  return fd;
}

bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

ControlChannel ControlChannel::alone() {
  ControlChannel ch;
  ch.size_ = 1;
  ch.open_events();
  return ch;
}

ControlChannel ControlChannel::listen(const std::string& host, int size, std::string token,
                                      std::string label, int connections) {
  std::string who = connections < 0 ? "rank 0's " : "a host leader's ";
  if (connections < 0) connections = size - 1;
  // Beside a connection per rank: the listener, the eventfd and the epoll set.
  reserve_descriptors(static_cast<size_t>(connections) + 3,
                      who + label + " connections to " + std::to_string(connections) + " ranks");
  ControlChannel ch;
  ch.size_ = size;
  ch.label_ = std::move(label);
  ch.token_ = std::move(token);
  ch.open_events();
  int port = 0;
  ch.listener_ = as_internal("cannot listen for " + ch.label_ + " connections", [&] {
    // Room in the queue for strays beside every rank: a full queue would stall ranks' connects.
    return net::listen_tcp(host, port, size + static_cast<int>(kMaxPendingExtra));
  });
  // Non-blocking: accept_workers accepts until EAGAIN and must never block in accept().
  net::set_nonblocking(ch.listener_.get());
  ch.address_ = net::local_address(ch.listener_.get());
  ch.peers_.resize(size);
  for (int r = 0; r < size; ++r) ch.peers_[r].rank = r;
  return ch;
}

std::string ControlChannel::address() const {
  return address_;
}

struct ControlChannel::Hello {
  Fd fd;
  std::string peer;
  SteadyClock::time_point deadline;
  std::array<std::byte, net::kFrameHeaderSize + kMaxHello> bytes{};  // length prefix, then hello
  size_t got = 0;
  bool done = false;  // taken as a rank's or dropped: to be forgotten
};

void ControlChannel::accept_workers(milliseconds timeout, const Cancellation* cancel) {
  auto deadline = SteadyClock::now() + timeout;
  auto hello_timeout = std::min(timeout, kHelloTimeout);
  std::vector<Hello> pending;
  auto paused_until = SteadyClock::time_point::min();  // accepting, unless out of descriptors
  int connected = 0;
  while (connected < expected_count()) {
    auto now = SteadyClock::now();
    if (now >= deadline) {
      throw InternalError("timed out waiting for " + std::to_string(expected_count() - connected) +
                          " rank(s) to open their " + label_ + " connection (" + missing_ranks() +
                          ")");
    }
    bool accepting = now >= paused_until;
    std::vector<pollfd> fds{{accepting ? listener_.get() : -1, POLLIN, 0}};
    auto next = accepting ? deadline : std::min(deadline, paused_until);
    for (const auto& h : pending) {
      fds.push_back({h.fd.get(), POLLIN, 0});
      next = std::min(next, h.deadline);
    }
    poll_until(fds, next, cancel);
    // Hellos that arrived first, then the late ones, then new connections.
    for (size_t i = 0; i < pending.size(); ++i) {
      if (fds[i + 1].revents != 0) pending[i].done = read_hello(pending[i], connected);
    }
    now = SteadyClock::now();
    for (size_t i = 0; i < pending.size(); ++i) {
      if (pending[i].done || now < pending[i].deadline) continue;
      log::limited(log::Level::kWarning, label_ + " hello", "dropped a ", label_,
                   " connection from ", pending[i].peer, ": it sent no hello within ",
                   hello_timeout.count(), " ms");
      pending[i].done = true;
    }
    std::erase_if(pending, [](const auto& p) { return p.done; });
    if (fds[0].revents != 0 && !accept_batch(pending, hello_timeout, connected)) {
      paused_until = SteadyClock::now() + milliseconds(100);
    }
  }
  listener_.reset();
}

bool ControlChannel::accept_batch(std::vector<Hello>& pending, milliseconds hello_timeout,
                                  int& connected) {
  for (int i = 0; i < 64 && connected < expected_count(); ++i) {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    Fd fd(::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len,
                    SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd.valid()) {
      int error = errno;
      if (error == EAGAIN || error == EWOULDBLOCK) return true;
      if (error == EINTR || error == ECONNABORTED) continue;
      if ((error == EMFILE || error == ENFILE) && !pending.empty()) {
        pending.erase(pending.begin());  // the oldest stray gives its descriptor back
        continue;
      }
      log::limited(log::Level::kWarning, label_ + " accept", "cannot accept a ", label_,
                   " connection: ", std::strerror(error));
      return false;
    }
    if (pending.size() >= static_cast<size_t>(size_) + kMaxPendingExtra) {
      log::limited(log::Level::kWarning, label_ + " hello", "dropped a ", label_,
                   " connection from ", pending.front().peer, ": ", pending.size(),
                   " connections were waiting for their hello (the oldest goes first)");
      pending.erase(pending.begin());
    }
    pending.push_back({.fd = std::move(fd),
                       .peer = net::address_text(addr),
                       .deadline = SteadyClock::now() + hello_timeout});
    // A rank sends its hello right after connecting: it is usually here already.
    if (read_hello(pending.back(), connected)) pending.pop_back();
  }
  return true;
}

bool ControlChannel::read_hello(Hello& h, int& connected) {
  auto drop = [&](const std::string& why) {
    log::limited(log::Level::kWarning, label_ + " hello", "dropped a ", label_, " connection from ",
                 h.peer, ": ", why);
    return true;
  };
  // Exactly the hello's bytes: whatever the rank sends next stays in the socket for wait().
  size_t want = net::kFrameHeaderSize;
  for (;;) {
    if (h.got >= net::kFrameHeaderSize) {
      uint32_t len = net::frame_length(h.bytes.data());
      if (len > kMaxHello) return drop("its hello announces " + std::to_string(len) + " bytes");
      want = net::kFrameHeaderSize + len;
    }
    if (h.got == want) break;
    ssize_t n = ::recv(h.fd.get(), h.bytes.data() + h.got, want - h.got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (n == 0) return drop("it closed the connection before its hello was complete");
    if (n < 0) return drop(errno_text());
    h.got += static_cast<size_t>(n);
  }
  ControlHello hello;
  try {
    hello = parse_control_hello(
        std::span(h.bytes.data() + net::kFrameHeaderSize, h.got - net::kFrameHeaderSize));
  } catch (const InternalError& e) {
    return drop(std::string("malformed hello: ") + e.what());
  }
  if (!same_token(hello.token, token_)) return drop("wrong job token");
  int rank = hello.rank;
  if (rank <= 0 || rank >= size_ || !expected(rank) || peers_[rank].fd.valid()) {
    return drop("unexpected rank " + std::to_string(rank));
  }
  net::set_nodelay(h.fd.get());
  peers_[rank].fd = std::move(h.fd);
  watch(static_cast<size_t>(rank));
  ++connected;
  return true;
}

std::string ControlChannel::missing_ranks() const {
  std::string out;
  int shown = 0;
  for (int r = 1; r < size_; ++r) {
    if (!expected(r) || peers_[r].fd.valid()) continue;
    if (shown++ == 8) return out + ", ...";
    out += (out.empty() ? "rank " : ", ") + std::to_string(r);
  }
  return out;
}

void ControlChannel::open_events() {
  wake_fd_ = make_wake_fd();
  epoll_ =
      as_internal("cannot watch " + label_ + " connections", [] { return EpollSet::create(); });
  as_internal("cannot watch " + label_ + " connections",
              [&] { epoll_.add(wake_fd_.get(), EPOLLIN | EPOLLET, kWakeTag); });
}

void ControlChannel::watch(size_t index) {
  as_internal(
      "cannot watch the " + label_ + " connection to rank " + std::to_string(peers_[index].rank),
      [&] {
        epoll_.add(peers_[index].fd.get(), EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, index);
      });
}

void ControlChannel::close_connection(Peer& p) {
  epoll_.remove(p.fd.get());
  p.fd.reset();
}

size_t ControlChannel::index_of(int rank) const {
  // A channel that listened holds every rank at its index; one that connected, its peer alone.
  return peers_.size() == 1 ? 0 : static_cast<size_t>(rank);
}

ControlChannel::Peer& ControlChannel::peer(int rank) {
  size_t index = index_of(rank);
  if (rank >= 0 && index < peers_.size()) {
    Peer& p = peers_[index];
    if (p.rank == rank && p.fd.valid()) return p;
  }
  throw_if_broken();
  throw InternalError("no " + label_ + " connection to rank " + std::to_string(rank));
}

void ControlChannel::send(int rank, std::span<const std::byte> payload) {
  Peer& p = peer(rank);
  net::append_frame(p.out, payload);
  write_some(p);
}

void ControlChannel::write_some(Peer& p) {
  if (p.rings) return write_ring(p);
  while (!p.out.empty()) {
    ssize_t n = ::send(p.fd.get(), p.out.data(), p.out.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    // Full: the socket's EPOLLOUT edge brings wait() back to write the rest.
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0) {
      throw InternalError(label_ + " connection to " + who(p) +
                          " broke while sending: " + errno_text());
    }
    p.out.erase(p.out.begin(), p.out.begin() + n);
  }
}

void ControlChannel::read_socket(Peer& p, bool to_the_end) {
  std::byte buf[64 * 1024];
  for (;;) {
    ssize_t n = ::recv(p.fd.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      // Deliver what arrived before the close first; the next wait() reports the break. A reset
      // is a close with our data unread, as when a process dies: the same to the reader.
      bool closed = n == 0 || errno == ECONNRESET;
      p.broken =
          label_ + " connection to " + who(p) +
          (closed ? " was closed by the peer (did it exit or crash?)" : " broke: " + errno_text());
      ++broken_;
      close_connection(p);
      break;
    }
    if (!p.rings) p.in.insert(p.in.end(), buf, buf + n);
    // Less than asked for: TCP gave all it had, and bytes that come later raise a new edge. A
    // close that came with these bytes raised none of its own: it takes the read to the end.
    if (!to_the_end && static_cast<size_t>(n) < sizeof buf) break;
  }
}

void ControlChannel::take_messages(Peer& p, std::vector<ControlMessage>& messages) {
  std::vector<std::vector<std::byte>> frames;
  try {
    frames = net::take_frames(p.in, kMaxFrame);
  } catch (const net::FrameError&) {
    throw InternalError("rank " + std::to_string(p.rank) + " sent an oversized " + label_ +
                        " frame");
  }
  for (auto& frame : frames) messages.push_back({p.rank, std::move(frame)});
}

void ControlChannel::clear_wake() {
  uint64_t count;
  [[maybe_unused]] ssize_t n = ::read(wake_fd_.get(), &count, sizeof count);
}

void ControlChannel::wake() {
  woken_->store(true, std::memory_order_relaxed);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
}

void ControlChannel::throw_if_broken() const {
  if (broken_ == 0) return;
  for (const auto& p : peers_) {
    if (!p.broken.empty()) throw InternalError(p.broken);
  }
}

std::vector<ControlMessage> ControlChannel::wait(std::chrono::microseconds timeout) {
  throw_if_broken();
  if (timeout.count() > 0 && spin_for_rings(std::min(timeout, spin_))) timeout = {};
  if (timeout.count() > 0 && !rings_sleep()) timeout = {};
  auto events = as_internal(label_ + " sockets", [&] { return epoll_.wait(timeout); });
  rings_awake();
  std::vector<ControlMessage> messages;
  for (const epoll_event& e : events) {
    if (e.data.u64 == kWakeTag) {
      clear_wake();
      continue;
    }
    Peer& p = peers_[e.data.u64];
    if (p.fd.valid()) serve(p, e.events, messages);
  }
  for (size_t index : ring_peers_) {
    Peer& p = peers_[index];
    // A peer whose connection broke in this wait may have left messages in its ring.
    if (!p.rings || (!p.fd.valid() && p.broken.empty())) continue;
    write_ring(p);
    read_ring(p);
    take_messages(p, messages);
  }
  if (messages.empty()) throw_if_broken();
  return messages;
}

void ControlChannel::serve(Peer& p, uint32_t events, std::vector<ControlMessage>& messages) {
  if (events & EPOLLOUT) write_some(p);
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    read_socket(p, (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
  }
  if (!p.rings) take_messages(p, messages);  // a ring peer's come with the rings', below
}

std::string ControlChannel::who(const Peer& p) {
  return p.name.empty() ? "rank " + std::to_string(p.rank) : p.name;
}

void ControlChannel::expect(const std::vector<int>& ranks) {
  expected_.assign(static_cast<size_t>(size_), false);
  for (int r : ranks) {
    if (r > 0 && r < size_) expected_[static_cast<size_t>(r)] = true;
  }
}

int ControlChannel::expected_count() const {
  if (expected_.empty()) return size_ - 1;
  return static_cast<int>(std::count(expected_.begin(), expected_.end(), true));
}

bool ControlChannel::expected(int rank) const {
  return expected_.empty() || expected_[static_cast<size_t>(rank)];
}

void ControlChannel::name_peer(int rank, std::string name) {
  size_t index = index_of(rank);
  if (rank >= 0 && index < peers_.size() && peers_[index].rank == rank) {
    peers_[index].name = std::move(name);
  }
}

void ControlChannel::close_peers() {
  listener_.reset();
  for (auto& p : peers_) close_connection(p);
}

void ControlChannel::drop(int rank) {
  size_t index = index_of(rank);
  if (rank < 0 || index >= peers_.size() || peers_[index].rank != rank) return;
  Peer& p = peers_[index];
  if (!p.broken.empty()) --broken_;
  close_connection(p);
  p = Peer{};
  p.rank = rank;  // known, and not connected
}

void ControlChannel::flush(milliseconds timeout) {
  auto deadline = SteadyClock::now() + timeout;
  std::exception_ptr first_error;
  for (auto& p : peers_) {
    try {
      while (p.fd.valid() && !p.out.empty()) {
        write_some(p);
        if (p.out.empty()) break;
        // A ring peer's doorbell says its ring has room again; a socket's POLLOUT, that it has.
        std::vector<pollfd> fds{{p.fd.get(), static_cast<short>(p.rings ? POLLIN : POLLOUT), 0}};
        if (!poll_until(fds, deadline)) {
          throw InternalError("timed out sending " + label_ + " messages to " + who(p));
        }
        if (p.rings) read_socket(p, true);
        if (!p.broken.empty()) throw InternalError(p.broken);
      }
    } catch (const InternalError&) {
      // Keep flushing to the others; one broken peer must not silence the rest.
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace cohort
