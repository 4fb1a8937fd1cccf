#include "rendezvous/server_loop.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/fd_limit.h"
#include "base/framed_socket.h"
#include "base/log.h"

namespace cohort::rendezvous {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kListener = 0;
constexpr int64_t kWake = 1;

// Lets this process hold a descriptor for each connection the limits admit, as far as the hard
// limit allows; an accept past it is logged naming RLIMIT_NOFILE (accept_one).
void raise_descriptor_limit(const RendezvousServerOptions& options) {
  auto need = static_cast<unsigned long>(options.max_connections) +
              static_cast<unsigned long>(options.max_unauthenticated) + 256;
  unsigned long soft = raise_soft_descriptor_limit(need);
  if (soft != RLIM_INFINITY && soft < need) {
    log::debug("rendezvous: RLIMIT_NOFILE allows ", soft, " descriptors, below the ", need,
               " max_connections and the lobby may need");
  }
}

std::string descriptor_limits() {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  return "RLIMIT_NOFILE of this process: " + std::to_string(limit.rlim_cur) + ", hard limit " +
         std::to_string(limit.rlim_max);
}

}  // namespace

ServerLoop::ServerLoop(RendezvousServer& server, const std::string& host,
                       const RendezvousServerOptions& options)
    : server_(server), options_(options) {
  raise_descriptor_limit(options_);
  // A burst of a whole round connects at once: the kernel's queue holds it (up to somaxconn)
  // instead of dropping SYNs, which clients would resend only a second later.
  listener_ = net::listen_tcp(host, port_, options_.max_connections + options_.max_unauthenticated);
  net::set_nonblocking(listener_.get());
  epoll_ = Fd(::epoll_create1(EPOLL_CLOEXEC));
  wake_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!epoll_.valid() || !wake_.valid()) {
    throw Error(std::string("rendezvous server: epoll or eventfd: ") + std::strerror(errno));
  }
  for (auto [fd, id] : {std::pair{listener_.get(), kListener}, std::pair{wake_.get(), kWake}}) {
    epoll_event ev{.events = EPOLLIN, .data = {.u64 = static_cast<uint64_t>(id)}};
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      throw Error(std::string("rendezvous server: epoll_ctl: ") + std::strerror(errno));
    }
  }
}

void ServerLoop::wake() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
}

void ServerLoop::stop() {
  ::shutdown(listener_.get(), SHUT_RDWR);  // later connections are refused, not left queued
  wake();
}

void ServerLoop::run() {
  std::vector<epoll_event> events(256);
  for (;;) {
    int n =
        ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), wait_millis());
    if (server_.stopping()) return shut_down();
    bool accept_ready = false;
    for (int i = 0; i < n; ++i) {
      auto id = static_cast<Id>(events[i].data.u64);
      if (id == kListener) {
        accept_ready = true;
      } else if (id == kWake) {
        uint64_t count;
        [[maybe_unused]] ssize_t r = ::read(wake_.get(), &count, sizeof count);
      } else {
        on_event(id, events[i].events);
      }
    }
    // Connections that have sent something first, then the late ones, then new ones: a worker's
    // header is read before anything can push it out.
    answer_woken();
    expire(Clock::now());
    if (paused_until_ != Clock::time_point::min() && Clock::now() >= paused_until_) {
      paused_until_ = Clock::time_point::min();
      epoll_event ev{.events = EPOLLIN, .data = {.u64 = kListener}};
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, listener_.get(), &ev);
    }
    if (accept_ready) accept_batch();
    answer_woken();
    server_.unauthenticated_ = static_cast<int>(lobby_.size());
  }
}

int ServerLoop::wait_millis() const {
  auto next = deadlines_.empty() ? Clock::time_point::max() : deadlines_.begin()->first;
  if (paused_until_ != Clock::time_point::min()) next = std::min(next, paused_until_);
  return poll_millis(next);
}

void ServerLoop::shut_down() {
  // Parked GETs are told; one write each, never waited for: stop() must not hang on a client.
  for (auto& [id, c] : connections_) {
    if (c.phase != Phase::kParked) continue;
    if (auto response = server_.answer_parked(c.request, id, true)) {
      std::string out;
      std::string sealed = seal_response(server_.secret_, *response);
      uint32_t len = htonl(static_cast<uint32_t>(sealed.size()));
      out.append(reinterpret_cast<const char*>(&len), sizeof len).append(sealed);
      [[maybe_unused]] ssize_t w =
          ::send(c.fd.get(), out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  }
  connections_.clear();
  lobby_.clear();
  lobby_by_address_.clear();
  server_.unauthenticated_ = 0;
}

void ServerLoop::accept_batch() {
  // A bounded batch, so the loop also gets back to the connections it holds under a flood.
  for (int i = 0; i < 256; ++i) {
    if (!accept_one()) return;
  }
}

bool ServerLoop::accept_one() {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  int fd = ::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len,
                     SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd >= 0) {
    char ip[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
    admit(Fd(fd), ip, ntohs(addr.sin_port));
    return true;
  }
  int error = errno;
  // EINVAL: stop() shut the listener down.
  if (error == EAGAIN || error == EWOULDBLOCK || error == EINVAL) return false;
  if (error == EINTR || error == ECONNABORTED) return true;
  if ((error == EMFILE || error == ENFILE) && !lobby_.empty()) {
    // Out of descriptors: the oldest unauthenticated connection gives its own back.
    drop(*lobby_.begin(), "dropped: this process is out of file descriptors");
    return true;
  }
  log::limited(log::Level::kWarning, "rendezvous-accept",
               "rendezvous: cannot accept a connection: ", std::strerror(error),
               error == EMFILE ? " (" + descriptor_limits() + ")" : std::string());
  // Back off instead of spinning on the same error.
  paused_until_ = Clock::now() + 100ms;
  epoll_event ev{.events = 0, .data = {.u64 = kListener}};
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, listener_.get(), &ev);
  return false;
}

void ServerLoop::admit(Fd fd, const std::string& address, int port) {
  make_room(address);
  net::set_nodelay(fd.get());
  Id id = next_id_++;
  Connection& c = connections_[id];
  c.fd = std::move(fd);
  c.peer = address + ":" + std::to_string(port);
  c.address = address;
  epoll_event ev{.events = EPOLLIN | EPOLLRDHUP, .data = {.u64 = static_cast<uint64_t>(id)}};
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, c.fd.get(), &ev);
  lobby_.insert(id);
  lobby_by_address_[address].insert(id);
  set_deadline(id, c, Clock::now() + options_.auth_timeout);
  // A worker sends its header right after connecting: it is usually here already.
  read_ready(id);
}

void ServerLoop::make_room(const std::string& address) {
  auto same = lobby_by_address_.find(address);
  bool per_address =
      same != lobby_by_address_.end() &&
      static_cast<int>(same->second.size()) >= options_.max_unauthenticated_per_address;
  if (!per_address && static_cast<int>(lobby_.size()) < options_.max_unauthenticated) return;
  Id victim = per_address ? *same->second.begin() : *lobby_.begin();  // the oldest
  drop(victim,
       "dropped to make room for a newer connection: it had not sent a signed frame "
       "header yet (" +
           std::to_string(per_address ? options_.max_unauthenticated_per_address
                                      : options_.max_unauthenticated) +
           " unauthenticated connections are allowed " +
           (per_address ? "per address)" : "in all)"));
}

void ServerLoop::on_event(Id id, uint32_t events) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;  // closed earlier in this batch
  Connection& c = it->second;
  if (c.phase == Phase::kWriting) {
    if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) flush(id, c);
  } else if (c.phase == Phase::kParked) {
    // It sends nothing while it waits: a hang-up means the worker went away.
    if (events & (EPOLLRDHUP | EPOLLERR | EPOLLHUP)) close(id);
  } else {
    read_ready(id);
  }
}

void ServerLoop::read_ready(Id id) {
  for (;;) {
    auto it = connections_.find(id);  // acting on a whole frame may have closed it
    if (it == connections_.end()) return;
    Connection& c = it->second;
    if (c.phase != Phase::kLobby && c.phase != Phase::kIdle && c.phase != Phase::kFrame) return;
    if (c.in.size() < c.want) {
      size_t start = c.in.size();
      c.in.resize(c.want);
      ssize_t n = ::recv(c.fd.get(), c.in.data() + start, c.want - start, MSG_DONTWAIT);
      int error = errno;
      c.in.resize(start + static_cast<size_t>(std::max<ssize_t>(n, 0)));
      if (n < 0 && error == EINTR) continue;
      if (n < 0 && (error == EAGAIN || error == EWOULDBLOCK)) return;
      if (n <= 0) return closed_by_peer(id, c, n == 0 ? "" : std::strerror(error));
      if (c.phase == Phase::kIdle) {
        // An authenticated worker may stay idle for the whole job; once it speaks, it finishes.
        c.phase = Phase::kFrame;
        set_deadline(id, c, Clock::now() + options_.frame_timeout);
      }
      if (c.in.size() < c.want) continue;
    }
    if (c.payload) {
      on_payload(id, c);
    } else {
      on_header(id, c);
    }
  }
}

void ServerLoop::closed_by_peer(Id id, Connection& c, const std::string& error) {
  bool quiet = c.in.empty() && !c.payload;  // between frames, or connected and left: no attack
  if (!error.empty() && c.phase != Phase::kLobby) {
    log::debug("rendezvous: connection from ", c.peer, " ended: ", error);
    return close(id);
  }
  if (quiet) return close(id);
  if (!error.empty()) return drop(id, "reading a frame header: " + error);
  drop(id, c.payload ? "connection closed after a frame header"
                     : "connection closed inside a frame header");
}

void ServerLoop::on_header(Id id, Connection& c) {
  bool first = c.phase == Phase::kLobby;
  try {
    c.header = open_signed_header(server_.secret_, c.in, kMaxRendezvousFrame);
    if (auto stale = outside_replay_window(c.header.timestamp_ms); stale && first) {
      server_.reject(c.peer, "stale frame header: " + *stale);
      // Signed, and tied to the header's nonce: a client knows the refusal is the server's.
      leave_lobby(id, c);
      c.close_after_write = true;
      return answer(id, c,
                    {.nonce = c.header.nonce,
                     .status = RendezvousStatus::kStale,
                     .value = "refused this worker's request: " + *stale});
    }
    server_.check_fresh(c.header.timestamp_ms, c.header.nonce, "frame header");
  } catch (const Error& e) {
    return drop(id, e.what());
  }
  if (first) {
    leave_lobby(id, c);
    int open = server_.authenticated();
    if (open >= options_.max_connections) {
      log::limited(log::Level::kWarning, "rendezvous-refusing", "rendezvous: refusing ", c.peer,
                   ": ", open, " authenticated connections are open already (the limit, ",
                   "max_connections)");
      return close(id);
    }
    server_.count_authenticated(1);
    c.authenticated = true;
    log::debug("rendezvous: ", c.peer, " authenticated");
  }
  c.phase = Phase::kFrame;
  c.payload = true;
  c.in.clear();
  c.want = c.header.length;
  set_deadline(id, c, Clock::now() + options_.frame_timeout);
}

void ServerLoop::on_payload(Id id, Connection& c) {
  RendezvousRequest request;
  try {
    request = open_request(server_.secret_, c.in);
    server_.check_fresh(request.timestamp_ms, request.nonce, "request");
  } catch (const Error& e) {
    return drop(id, e.what());
  }
  auto response = server_.handle(request, id);
  if (request.op != RendezvousOp::kGet && response && response->status == RendezvousStatus::kOk &&
      options_.on_set) {
    options_.on_set(request.scope, request.key);
  }
  if (response) return answer(id, c, *response);
  auto wait = std::min(std::chrono::milliseconds(request.timeout_ms), options_.max_get_wait);
  c.phase = Phase::kParked;
  c.request = std::move(request);
  c.in.clear();
  watch(id, c, EPOLLRDHUP);
  set_deadline(id, c, Clock::now() + wait);
}

void ServerLoop::answer(Id id, Connection& c, const RendezvousResponse& response) {
  std::string sealed = seal_response(server_.secret_, response);
  uint32_t len = htonl(static_cast<uint32_t>(sealed.size()));
  c.out.assign(reinterpret_cast<const char*>(&len), sizeof len).append(sealed);
  c.sent = 0;
  c.phase = Phase::kWriting;
  c.in.clear();
  set_deadline(id, c, Clock::now() + options_.frame_timeout);
  flush(id, c);
}

void ServerLoop::flush(Id id, Connection& c) {
  while (c.sent < c.out.size()) {
    ssize_t n = ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return watch(id, c, EPOLLOUT);
    if (n < 0) {
      log::debug("rendezvous: connection from ", c.peer, " ended: ", std::strerror(errno));
      return close(id);
    }
    c.sent += static_cast<size_t>(n);
  }
  if (c.close_after_write) return close(id);
  c.out.clear();
  expect_header(c);
  set_deadline(id, c, Clock::time_point::max());
  // The next request, if it is here already, makes the descriptor readable at the next wait.
  watch(id, c, EPOLLIN | EPOLLRDHUP);
}

void ServerLoop::expect_header(Connection& c) {
  c.phase = Phase::kIdle;
  c.payload = false;
  c.in.clear();
  c.want = kSignedHeaderSize;
}

void ServerLoop::answer_woken() {
  for (Id id : server_.take_woken()) {
    auto it = connections_.find(id);
    if (it == connections_.end() || it->second.phase != Phase::kParked) continue;
    if (auto response = server_.answer_parked(it->second.request, id, false)) {
      answer(id, it->second, *response);
    }
  }
}

void ServerLoop::expire(Clock::time_point now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    Id id = deadlines_.begin()->second;
    Connection& c = connections_.at(id);
    deadlines_.erase(deadlines_.begin());
    c.deadline = Clock::time_point::max();
    on_deadline(id, c);
  }
}

void ServerLoop::on_deadline(Id id, Connection& c) {
  switch (c.phase) {
    case Phase::kLobby:
      return drop(id, "sent no signed frame header within " +
                          std::to_string(options_.auth_timeout.count()) + " ms of connecting");
    case Phase::kFrame:
      return drop(id, std::string(c.payload ? "frame payload" : "frame header") +
                          " not received whole within " +
                          std::to_string(options_.frame_timeout.count()) + " ms");
    case Phase::kParked:
      if (auto response = server_.answer_parked(c.request, id, true)) answer(id, c, *response);
      return;
    case Phase::kWriting:
      log::debug("rendezvous: ", c.peer, " did not take its answer within ",
                 options_.frame_timeout.count(), " ms");
      return close(id);
    case Phase::kIdle:
      return;
  }
}

void ServerLoop::set_deadline(Id id, Connection& c, Clock::time_point deadline) {
  if (c.deadline != Clock::time_point::max()) deadlines_.erase({c.deadline, id});
  c.deadline = deadline;
  if (deadline != Clock::time_point::max()) deadlines_.insert({deadline, id});
}

void ServerLoop::watch(Id id, const Connection& c, uint32_t events) {
  epoll_event ev{.events = events, .data = {.u64 = static_cast<uint64_t>(id)}};
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
}

void ServerLoop::leave_lobby(Id id, const Connection& c) {
  if (lobby_.erase(id) == 0) return;
  auto it = lobby_by_address_.find(c.address);
  it->second.erase(id);
  if (it->second.empty()) lobby_by_address_.erase(it);
}

void ServerLoop::drop(Id id, const std::string& reason) {
  server_.reject(connections_.at(id).peer, reason);
  close(id);
}

void ServerLoop::close(Id id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  Connection& c = it->second;
  set_deadline(id, c, Clock::time_point::max());
  leave_lobby(id, c);
  if (c.authenticated) server_.count_authenticated(-1);
  if (c.phase == Phase::kParked) server_.unpark(c.request, id);
  connections_.erase(it);  // closing the descriptor takes it out of the epoll set
}

}  // namespace cohort::rendezvous
