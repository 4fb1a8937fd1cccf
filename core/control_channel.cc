#include "core/control_channel.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "base/cancellation.h"
#include "base/log.h"
#include "base/net.h"
#include "cohort/errors.h"
#include "core/control_hello.h"

namespace cohort {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Control frames are request and response lists; nothing legitimate comes near this.
constexpr uint32_t kMaxFrame = 64u << 20;

std::string errno_text() {
  return std::strerror(errno);
}

// The control channel reports every failure as InternalError: it is the runtime's transport.
sockaddr_in resolve(const std::string& host, int port) {
  try {
    return net::resolve_ipv4(host, port);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    throw InternalError(std::string("control channel: ") + e.what());
  }
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int remaining_ms(Clock::time_point deadline) {
  // Rounded up: a wait that returns a fraction of a millisecond early would time out early.
  auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

// Polls `fds` beside the cancellation until one is ready or `deadline`; false on timeout. Throws
// InternalError with the cancellation's reason once it fires.
bool poll_until(std::vector<pollfd>& fds, Clock::time_point deadline, const Cancellation* cancel) {
  fds.push_back({cancel_fd(cancel), POLLIN, 0});
  int rc;
  do {
    rc = ::poll(fds.data(), fds.size(), remaining_ms(deadline));
  } while (rc < 0 && errno == EINTR);
  fds.pop_back();
  if (rc < 0) throw InternalError("poll failed: " + errno_text());
  throw_if_cancelled(cancel);
  return rc > 0;
}

// Blocking helper for the handshake only, bounded by the deadline.
void poll_one(int fd, short events, Clock::time_point deadline, const std::string& what,
              const Cancellation* cancel = nullptr) {
  std::vector<pollfd> fds{{fd, events, 0}};
  if (!poll_until(fds, deadline, cancel)) throw InternalError("timed out " + what);
}

std::string peer_name(const sockaddr_in& addr) {
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
}

// One non-blocking connect attempt within `deadline`; 0 or the errno that failed it.
int try_connect(int fd, const sockaddr_in& addr, Clock::time_point deadline,
                const std::string& what, const Cancellation* cancel) {
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  poll_one(fd, POLLOUT, deadline, what, cancel);
  int error = 0;
  socklen_t len = sizeof error;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
  return error;
}

std::vector<std::byte> frame(const std::vector<std::byte>& payload) {
  uint32_t len = static_cast<uint32_t>(payload.size());
  std::vector<std::byte> out(sizeof len + payload.size());
  std::memcpy(out.data(), &len, sizeof len);
  if (!payload.empty()) std::memcpy(out.data() + sizeof len, payload.data(), payload.size());
  return out;
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
  ch.wake_fd_ = make_wake_fd();
  return ch;
}

ControlChannel ControlChannel::listen(const std::string& host, int size, std::string token,
                                      std::string label) {
  ControlChannel ch;
  ch.size_ = size;
  ch.label_ = std::move(label);
  ch.token_ = std::move(token);
  ch.wake_fd_ = make_wake_fd();
  // Non-blocking: accept_workers accepts until EAGAIN and must never block in accept().
  ch.listener_ = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in addr = resolve(host, 0);
  if (::bind(ch.listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      // Room in the queue for strays beside every rank: a full queue would stall ranks' connects.
      ::listen(ch.listener_.get(), size + static_cast<int>(kMaxPendingExtra)) != 0) {
    throw InternalError("cannot listen for " + ch.label_ + " connections on " + host + ": " +
                        errno_text());
  }
  socklen_t len = sizeof addr;
  getsockname(ch.listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  char ip[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
  ch.address_ = std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
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
  Clock::time_point deadline;
  std::array<std::byte, sizeof(uint32_t) + kMaxHello> bytes{};  // length prefix, then the hello
  size_t got = 0;
  bool done = false;  // taken as a rank's or dropped: to be forgotten
};

void ControlChannel::accept_workers(milliseconds timeout, const Cancellation* cancel) {
  auto deadline = Clock::now() + timeout;
  auto hello_timeout = std::min(timeout, kHelloTimeout);
  std::vector<Hello> pending;
  auto paused_until = Clock::time_point::min();  // accepting, unless out of descriptors
  int connected = 0;
  while (connected < size_ - 1) {
    auto now = Clock::now();
    if (now >= deadline) {
      throw InternalError("timed out waiting for " + std::to_string(size_ - 1 - connected) +
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
    now = Clock::now();
    for (size_t i = 0; i < pending.size(); ++i) {
      if (pending[i].done || now < pending[i].deadline) continue;
      log::limited(log::Level::kWarning, label_ + " hello", "dropped a ", label_,
                   " connection from ", pending[i].peer, ": it sent no hello within ",
                   hello_timeout.count(), " ms");
      pending[i].done = true;
    }
    std::erase_if(pending, [](const auto& p) { return p.done; });
    if (fds[0].revents != 0 && !accept_batch(pending, hello_timeout, connected)) {
      paused_until = Clock::now() + milliseconds(100);
    }
  }
  listener_.reset();
}

bool ControlChannel::accept_batch(std::vector<Hello>& pending, milliseconds hello_timeout,
                                  int& connected) {
  for (int i = 0; i < 64 && connected < size_ - 1; ++i) {
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
    pending.push_back(
        {.fd = std::move(fd), .peer = peer_name(addr), .deadline = Clock::now() + hello_timeout});
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
  size_t want = sizeof(uint32_t);
  for (;;) {
    if (h.got >= sizeof(uint32_t)) {
      uint32_t len;
      std::memcpy(&len, h.bytes.data(), sizeof len);
      if (len > kMaxHello) return drop("its hello announces " + std::to_string(len) + " bytes");
      want = sizeof len + len;
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
    hello =
        parse_control_hello(std::span(h.bytes.data() + sizeof(uint32_t), h.got - sizeof(uint32_t)));
  } catch (const InternalError& e) {
    return drop(std::string("malformed hello: ") + e.what());
  }
  if (!same_token(hello.token, token_)) return drop("wrong job token");
  int rank = hello.rank;
  if (rank <= 0 || rank >= size_ || peers_[rank].fd.valid()) {
    return drop("unexpected rank " + std::to_string(rank));
  }
  set_nodelay(h.fd.get());
  peers_[rank].fd = std::move(h.fd);
  ++connected;
  return true;
}

std::string ControlChannel::missing_ranks() const {
  std::string out;
  int shown = 0;
  for (int r = 1; r < size_; ++r) {
    if (peers_[r].fd.valid()) continue;
    if (shown++ == 8) return out + ", ...";
    out += (out.empty() ? "rank " : ", ") + std::to_string(r);
  }
  return out;
}

ControlChannel ControlChannel::connect(int rank, int size, const std::string& address,
                                       const std::string& token, milliseconds timeout,
                                       std::string label, const Cancellation* cancel) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    throw InternalError("bad " + label + " address '" + address + "'");
  }
  sockaddr_in addr = resolve(address.substr(0, colon), std::stoi(address.substr(colon + 1)));
  ControlChannel ch;
  ch.size_ = size;
  ch.label_ = std::move(label);
  ch.wake_fd_ = make_wake_fd();
  ch.peers_.resize(1);
  ch.peers_[0].rank = 0;
  auto deadline = Clock::now() + timeout;
  std::string what = "opening the " + ch.label_ + " connection to rank 0 at " + address +
                     " (within " + std::to_string(timeout.count()) + " ms)";
  Fd fd;
  for (;;) {
    throw_if_cancelled(cancel);
    fd = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    int error = try_connect(fd.get(), addr, deadline, what, cancel);
    if (error == 0) break;
    // Rank 0 publishes its address only after it listens, so a refusal is a transient race.
    if (error != ECONNREFUSED || Clock::now() >= deadline) {
      throw InternalError("cannot open the " + ch.label_ + " connection to rank 0 at " + address +
                          ": " + std::strerror(error));
    }
    std::vector<pollfd> none;
    poll_until(none, std::min(deadline, Clock::now() + milliseconds(5)), cancel);
  }
  set_nodelay(fd.get());
  ch.peers_[0].fd = std::move(fd);
  Peer& p = ch.peers_[0];
  auto bytes = frame(encode_control_hello({rank, token}));
  p.out.assign(bytes.begin(), bytes.end());
  while (!p.out.empty()) {
    poll_one(p.fd.get(), POLLOUT, deadline, "sending the " + ch.label_ + " hello to rank 0",
             cancel);
    ch.write_some(p);
  }
  return ch;
}

ControlChannel::Peer& ControlChannel::peer(int rank) {
  for (auto& p : peers_) {
    if (p.rank == rank && p.fd.valid()) return p;
  }
  throw_if_broken();
  throw InternalError("no " + label_ + " connection to rank " + std::to_string(rank));
}

void ControlChannel::send(int rank, std::vector<std::byte> payload) {
  Peer& p = peer(rank);
  auto bytes = frame(payload);
  p.out.insert(p.out.end(), bytes.begin(), bytes.end());
  write_some(p);
}

void ControlChannel::write_some(Peer& p) {
  while (!p.out.empty()) {
    ssize_t n = ::send(p.fd.get(), p.out.data(), p.out.size(), MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n < 0) {
      throw InternalError(label_ + " connection to rank " + std::to_string(p.rank) +
                          " broke while sending: " + errno_text());
    }
    p.out.erase(p.out.begin(), p.out.begin() + n);
  }
}

void ControlChannel::read_some(Peer& p, std::vector<ControlMessage>& messages) {
  std::byte buf[64 * 1024];
  for (;;) {
    ssize_t n = ::recv(p.fd.get(), buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    if (n <= 0) {
      // Deliver what arrived before the close first; the next wait() reports the break. A reset
      // is a close with our data unread, as when a process dies: the same to the reader.
      bool closed = n == 0 || errno == ECONNRESET;
      p.broken =
          label_ + " connection to rank " + std::to_string(p.rank) +
          (closed ? " was closed by the peer (did it exit or crash?)" : " broke: " + errno_text());
      p.fd.reset();
      break;
    }
    p.in.insert(p.in.end(), buf, buf + n);
  }
  size_t pos = 0;
  while (p.in.size() - pos >= sizeof(uint32_t)) {
    uint32_t len;
    std::memcpy(&len, p.in.data() + pos, sizeof len);
    if (len > kMaxFrame) {
      throw InternalError("rank " + std::to_string(p.rank) + " sent an oversized " + label_ +
                          " frame");
    }
    if (p.in.size() - pos - sizeof len < len) break;
    auto begin = p.in.begin() + static_cast<std::ptrdiff_t>(pos + sizeof len);
    messages.push_back({p.rank, std::vector<std::byte>(begin, begin + len)});
    pos += sizeof len + len;
  }
  p.in.erase(p.in.begin(), p.in.begin() + static_cast<std::ptrdiff_t>(pos));
}

void ControlChannel::clear_wake() {
  uint64_t count;
  [[maybe_unused]] ssize_t n = ::read(wake_fd_.get(), &count, sizeof count);
}

void ControlChannel::wake() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
}

void ControlChannel::throw_if_broken() const {
  for (const auto& p : peers_) {
    if (!p.broken.empty()) throw InternalError(p.broken);
  }
}

std::vector<ControlMessage> ControlChannel::wait(std::chrono::microseconds timeout) {
  throw_if_broken();
  std::vector<pollfd> fds{{wake_fd_.get(), POLLIN, 0}};
  std::vector<Peer*> polled;
  for (auto& p : peers_) {
    if (!p.fd.valid()) continue;
    fds.push_back({p.fd.get(), static_cast<short>(POLLIN | (p.out.empty() ? 0 : POLLOUT)), 0});
    polled.push_back(&p);
  }
  // ppoll, not poll: the cycle time's batching windows are shorter than a millisecond.
  auto us = std::max<int64_t>(timeout.count(), 0);
  timespec ts{static_cast<time_t>(us / 1'000'000), static_cast<long>(us % 1'000'000) * 1000};
  int rc = ::ppoll(fds.data(), fds.size(), &ts, nullptr);
  if (rc < 0 && errno != EINTR) {
    throw InternalError("poll on " + label_ + " sockets: " + errno_text());
  }
  std::vector<ControlMessage> messages;
  if (rc <= 0) return messages;
  if (fds[0].revents & POLLIN) clear_wake();
  for (size_t i = 0; i < polled.size(); ++i) {
    short ev = fds[i + 1].revents;
    if (ev & POLLOUT) write_some(*polled[i]);
    if (ev & (POLLIN | POLLHUP | POLLERR)) read_some(*polled[i], messages);
  }
  if (messages.empty()) throw_if_broken();
  return messages;
}

void ControlChannel::close_peers() {
  listener_.reset();
  for (auto& p : peers_) p.fd.reset();
}

void ControlChannel::drop(int rank) {
  for (auto& p : peers_) {
    if (p.rank != rank) continue;
    p = Peer{};
  }
}

void ControlChannel::flush(milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  std::exception_ptr first_error;
  for (auto& p : peers_) {
    try {
      while (p.fd.valid() && !p.out.empty()) {
        poll_one(p.fd.get(), POLLOUT, deadline,
                 "sending " + label_ + " messages to rank " + std::to_string(p.rank));
        write_some(p);
      }
    } catch (const InternalError&) {
      // Keep flushing to the others; one broken peer must not silence the rest.
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace cohort
