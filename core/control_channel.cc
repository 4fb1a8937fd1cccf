#include "core/control_channel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "cohort/errors.h"
#include "core/log.h"
#include "core/net.h"
#include "core/wire.h"

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

void set_nonblocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

// Blocking helpers for the handshake only, each bounded by the deadline.
void poll_one(int fd, short events, Clock::time_point deadline, const std::string& what) {
  pollfd p{fd, events, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, remaining_ms(deadline));
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) throw InternalError("timed out " + what);
  if (rc < 0) throw InternalError(what + ": poll failed: " + errno_text());
}

void read_exact(int fd, void* data, size_t n, Clock::time_point deadline, const std::string& what) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    poll_one(fd, POLLIN, deadline, what);
    ssize_t got = ::recv(fd, p, n, 0);
    if (got == 0) throw InternalError(what + ": connection closed");
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (got < 0) throw InternalError(what + ": " + errno_text());
    p += got;
    n -= static_cast<size_t>(got);
  }
}

std::vector<std::byte> frame(const std::vector<std::byte>& payload) {
  uint32_t len = static_cast<uint32_t>(payload.size());
  const auto* len_bytes = reinterpret_cast<const std::byte*>(&len);
  std::vector<std::byte> out(len_bytes, len_bytes + sizeof len);
  out.insert(out.end(), payload.begin(), payload.end());
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
  ch.listener_ = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr = resolve(host, 0);
  if (::bind(ch.listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(ch.listener_.get(), size) != 0) {
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

void ControlChannel::accept_workers(milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  int connected = 0;
  while (connected < size_ - 1) {
    poll_one(listener_.get(), POLLIN, deadline,
             "waiting for " + std::to_string(size_ - 1 - connected) + " rank(s) to open their " +
                 label_ + " connection");
    Fd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd.valid()) continue;
    try {
      uint32_t len = 0;
      std::string what = "reading a " + label_ + " hello";
      read_exact(fd.get(), &len, sizeof len, deadline, what);
      if (len > 4096) throw InternalError("oversized " + label_ + " hello");
      std::vector<std::byte> hello(len);
      read_exact(fd.get(), hello.data(), len, deadline, what);
      wire::Reader rd(hello);
      int rank = rd.i32();
      std::string token = rd.str();
      if (!same_token(token, token_)) throw InternalError("wrong job token");
      if (rank <= 0 || rank >= size_ || peers_[rank].fd.valid()) {
        throw InternalError("unexpected rank " + std::to_string(rank));
      }
      set_nonblocking(fd.get());
      set_nodelay(fd.get());
      peers_[rank].fd = std::move(fd);
      ++connected;
    } catch (const InternalError& e) {
      // A stray or hostile connection must not stop the job from forming.
      log::warning("rejected a ", label_, " connection: ", e.what());
    }
  }
  listener_.reset();
}

ControlChannel ControlChannel::connect(int rank, int size, const std::string& address,
                                       const std::string& token, milliseconds timeout,
                                       std::string label) {
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
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  auto deadline = Clock::now() + timeout;
  while (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != ECONNREFUSED || Clock::now() > deadline) {
      throw InternalError("cannot open the " + ch.label_ + " connection to rank 0 at " + address +
                          ": " + errno_text());
    }
    // Rank 0 publishes its address only after it listens, so a refusal is a transient race.
    fd = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    poll(nullptr, 0, 5);
  }
  set_nodelay(fd.get());
  set_nonblocking(fd.get());
  ch.peers_[0].fd = std::move(fd);
  wire::Writer hello;
  hello.i32(rank);
  hello.str(token);
  ch.send(0, std::move(hello.bytes()));
  ch.flush(timeout);
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
