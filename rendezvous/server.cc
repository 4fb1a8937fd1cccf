#include "rendezvous/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/framed_socket.h"
#include "base/log.h"
#include "rendezvous/frame_io.h"

namespace cohort::rendezvous {
namespace {

using namespace std::chrono_literals;

std::string peer_address(const sockaddr_in& addr) {
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
  return ip;
}

// poll() until one of `fds` is ready or `deadline` (max: none).
void wait_readable_any(std::vector<pollfd>& fds, Clock::time_point deadline) {
  if (::poll(fds.data(), fds.size(), poll_millis(deadline)) < 0) {
    for (auto& p : fds) p.revents = 0;  // EINTR: look again
  }
}

}  // namespace

RendezvousServer::RendezvousServer(const std::string& host, std::string secret,
                                   RendezvousServerOptions options)
    : secret_(std::move(secret)), options_(options) {
  if (options_.max_unauthenticated < 1 || options_.max_unauthenticated_per_address < 1) {
    throw InvalidArgument(
        "rendezvous server: max_unauthenticated and "
        "max_unauthenticated_per_address must be at least 1");
  }
  listener_ = net::listen_tcp(host, port_);
  // Non-blocking: the lobby accepts until EAGAIN and must never block in accept().
  net::set_nonblocking(listener_.get());
  wake_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_.valid()) throw Error(std::string("eventfd: ") + std::strerror(errno));
  acceptor_ = std::thread([this] { lobby_loop(); });
}

RendezvousServer::~RendezvousServer() {
  stop();
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> threads;
  {
    MutexLock lock(mutex_);
    for (auto& [id, connection] : connections_) threads.push_back(std::move(connection.second));
    connections_.clear();
  }
  for (auto& t : threads) t.join();
}

void RendezvousServer::stop() {
  MutexLock lock(mutex_);
  if (stopping_) return;
  stopping_ = true;
  // The lobby wakes on its eventfd and closes its own connections. For the serving threads,
  // shutdown() rather than close(): it wakes the threads blocked reading these sockets, and the
  // descriptors stay theirs to close, so no number is reused under them. Only the reading side:
  // waiting GETs still answer "stopping" (each write bounded by frame_timeout).
  ::shutdown(listener_.get(), SHUT_RDWR);  // later connections are refused, not left queued
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
  for (auto& [id, connection] : connections_) {
    if (connection.first >= 0) ::shutdown(connection.first, SHUT_RD);
  }
  changed_.notify_all();
}

void RendezvousServer::clear_scope(const std::string& scope) {
  MutexLock lock(mutex_);
  scopes_.erase(scope);
}

void RendezvousServer::set(const std::string& key, const std::string& value,
                           const std::string& scope) {
  MutexLock lock(mutex_);
  set_locked(scope, key, value);
}

std::optional<std::string> RendezvousServer::lookup(const std::string& key,
                                                    const std::string& scope) const {
  MutexLock lock(mutex_);
  return find_locked(scope, key);
}

std::string RendezvousServer::get(const std::string& key, const std::string& scope,
                                  std::chrono::milliseconds wait, const Cancellation* cancel) {
  // Declared before the lock, so that it is removed after the lock is released: the hook takes
  // the lock to wake this wait.
  CancelHook hook(cancel, [this](const std::string&) {
    MutexLock lock(mutex_);
    changed_.notify_all();
  });
  MutexLock lock(mutex_);
  auto cancelled = [cancel] { return cancel && cancel->cancelled(); };
  std::optional<std::string> value;
  changed_.wait_for(mutex_, wait, [&]() REQUIRES(mutex_) {
    value = find_locked(scope, key);
    return value || stopping_ || cancelled();
  });
  bool stopping = stopping_;
  lock.unlock();
  throw_if_cancelled(cancel);
  if (value) return *value;
  if (stopping) throw Error("the rendezvous server is stopping");
  throw RendezvousTimeout("key '" + key + "' was not set within " + std::to_string(wait.count()) +
                          " ms");
}

bool RendezvousServer::compare_and_set(const std::string& key,
                                       const std::optional<std::string>& expected,
                                       const std::string& desired, const std::string& scope) {
  MutexLock lock(mutex_);
  return compare_and_set_locked({.op = RendezvousOp::kCompareSet,
                                 .scope = scope,
                                 .key = key,
                                 .value = desired,
                                 .expected = expected});
}

bool RendezvousServer::remove(const std::string& key, const std::string& scope) {
  MutexLock lock(mutex_);
  return remove_locked(scope, key);
}

std::optional<std::string> RendezvousServer::find_locked(const std::string& scope,
                                                         const std::string& key) const {
  auto it = scopes_.find(scope);
  if (it == scopes_.end()) return std::nullopt;
  auto value = it->second.find(key);
  if (value == it->second.end()) return std::nullopt;
  return value->second;
}

void RendezvousServer::set_locked(const std::string& scope, const std::string& key,
                                  const std::string& value) {
  scopes_[scope][key] = value;
  changed_.notify_all();
}

bool RendezvousServer::compare_and_set_locked(const RendezvousRequest& r) {
  auto current = find_locked(r.scope, r.key);
  if (current == r.value) return true;  // idempotent: a client's retry of one that matched
  if (current != r.expected) return false;
  set_locked(r.scope, r.key, r.value);
  return true;
}

bool RendezvousServer::remove_locked(const std::string& scope, const std::string& key) {
  auto it = scopes_.find(scope);
  return it != scopes_.end() && it->second.erase(key) > 0;
}

int RendezvousServer::rejected() const {
  MutexLock lock(mutex_);
  return rejected_;
}

int RendezvousServer::authenticated() const {
  MutexLock lock(mutex_);
  return static_cast<int>(connections_.size() - finished_.size());
}

bool RendezvousServer::await_rejected(int n, std::chrono::milliseconds timeout) const {
  MutexLock lock(mutex_);
  return changed_.wait_for(mutex_, timeout, [&]() REQUIRES(mutex_) { return rejected_ >= n; });
}

bool RendezvousServer::await_authenticated_at_most(int n, std::chrono::milliseconds timeout) const {
  MutexLock lock(mutex_);
  return changed_.wait_for(mutex_, timeout, [&]() REQUIRES(mutex_) {
    return static_cast<int>(connections_.size() - finished_.size()) <= n;
  });
}

bool RendezvousServer::contains(const std::string& key, const std::string& scope) const {
  MutexLock lock(mutex_);
  auto it = scopes_.find(scope);
  return it != scopes_.end() && it->second.contains(key);
}

bool RendezvousServer::await_waiting_gets(int n, std::chrono::milliseconds timeout) const {
  MutexLock lock(mutex_);
  return changed_.wait_for(mutex_, timeout, [&]() REQUIRES(mutex_) { return waiting_gets_ >= n; });
}

void RendezvousServer::lobby_loop() {
  std::vector<Pending> pending;
  auto paused_until = Clock::time_point::min();  // accepting, unless out of descriptors
  for (;;) {
    join_finished();
    auto now = Clock::now();
    bool accepting = now >= paused_until;
    std::vector<pollfd> fds{{wake_.get(), POLLIN, 0},
                            {accepting ? listener_.get() : -1, POLLIN, 0}};
    auto next = accepting ? Clock::time_point::max() : paused_until;
    for (const auto& p : pending) {
      fds.push_back({p.fd.get(), POLLIN, 0});
      next = std::min(next, p.deadline);
    }
    wait_readable_any(fds, next);
    {
      MutexLock lock(mutex_);
      if (stopping_) break;
    }
    // Connections that have sent something first, then the late ones, then new ones: a worker's
    // header is read before anything can push it out.
    for (size_t i = 0; i < pending.size(); ++i) {
      if (fds[i + 2].revents != 0) pending[i].done = progress(pending[i]);
    }
    now = Clock::now();
    for (size_t i = 0; i < pending.size(); ++i) {
      if (pending[i].done || now < pending[i].deadline) continue;
      reject(pending[i].peer, "sent no signed frame header within " +
                                  std::to_string(options_.auth_timeout.count()) +
                                  " ms of connecting");
      pending[i].done = true;
    }
    std::erase_if(pending, [](const auto& p) { return p.done; });
    if (fds[1].revents != 0 && !accept_batch(pending)) paused_until = Clock::now() + 100ms;
    unauthenticated_ = static_cast<int>(pending.size());
  }
  unauthenticated_ = 0;
}

bool RendezvousServer::accept_batch(std::vector<Pending>& pending) {
  // A bounded batch, so the lobby also gets back to the connections it holds under a flood.
  for (int i = 0; i < 64; ++i) {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    int fd = ::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len,
                       SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      int error = errno;
      if (error == EAGAIN || error == EWOULDBLOCK) return true;
      if (error == EINTR || error == ECONNABORTED) continue;
      if ((error == EMFILE || error == ENFILE) && !pending.empty()) {
        // Out of descriptors: the oldest unauthenticated connection gives its own back.
        reject(pending.front().peer, "dropped: this process is out of file descriptors");
        pending.erase(pending.begin());
        continue;
      }
      log::limited(log::Level::kWarning, "rendezvous-accept",
                   "rendezvous: cannot accept a connection: ", std::strerror(error));
      return false;  // back off instead of spinning on the same error
    }
    std::string address = peer_address(addr);
    make_room(pending, address);
    pending.push_back({.fd = Fd(fd),
                       .peer = address + ":" + std::to_string(ntohs(addr.sin_port)),
                       .address = address,
                       .deadline = Clock::now() + options_.auth_timeout});
    // A worker sends its header right after connecting: it is usually here already.
    if (progress(pending.back())) pending.pop_back();
  }
  return true;
}

void RendezvousServer::make_room(std::vector<Pending>& pending, const std::string& address) {
  int same = 0;
  for (const auto& p : pending) same += p.address == address;
  auto victim = pending.end();
  if (same >= options_.max_unauthenticated_per_address) {
    victim = std::find_if(pending.begin(), pending.end(),
                          [&](const Pending& p) { return p.address == address; });
  } else if (static_cast<int>(pending.size()) >= options_.max_unauthenticated) {
    victim = pending.begin();  // the oldest: accepted first
  }
  if (victim == pending.end()) return;
  reject(victim->peer,
         "dropped to make room for a newer connection: it had not sent a signed "
         "frame header yet (" +
             std::to_string(same >= options_.max_unauthenticated_per_address
                                ? options_.max_unauthenticated_per_address
                                : options_.max_unauthenticated) +
             " unauthenticated connections are allowed " +
             (same >= options_.max_unauthenticated_per_address ? "per address)" : "in all)"));
  pending.erase(victim);
}

bool RendezvousServer::progress(Pending& p) {
  while (p.got < p.header.size()) {
    ssize_t n = ::recv(p.fd.get(), p.header.data() + p.got, p.header.size() - p.got, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (n == 0 && p.got == 0) return true;  // connected and left without a word: no attack
    if (n <= 0) {
      reject(p.peer, n == 0 ? "connection closed inside a frame header"
                            : std::string("reading a frame header: ") + std::strerror(errno));
      return true;
    }
    p.got += static_cast<size_t>(n);
  }
  try {
    SignedHeader header = open_signed_header(
        secret_, std::string_view(p.header.data(), p.header.size()), kMaxRendezvousFrame);
    if (auto stale = outside_replay_window(header.timestamp_ms)) {
      reject(p.peer, "stale frame header: " + *stale);
      answer_stale(p.fd.get(), header, *stale);
      return true;
    }
    check_fresh(header.timestamp_ms, header.nonce, "frame header");
    log::debug("rendezvous: ", p.peer, " authenticated");
    start_serving(std::move(p.fd), p.peer, std::move(header));
  } catch (const Error& e) {
    reject(p.peer, e.what());
  }
  return true;
}

void RendezvousServer::start_serving(Fd fd, const std::string& peer, SignedHeader first) {
  MutexLock lock(mutex_);
  if (stopping_) return;
  int open = static_cast<int>(connections_.size() - finished_.size());
  if (open >= options_.max_connections) {
    log::limited(log::Level::kWarning, "rendezvous-refusing", "rendezvous: refusing ", peer, ": ",
                 open, " authenticated connections are open already (the limit)");
    return;
  }
  int id = next_connection_++;
  int raw = fd.get();
  connections_[id] = {
      raw, std::thread([this, id, fd = std::move(fd), peer, first = std::move(first)]() mutable {
        serve(fd.get(), peer, std::move(first));
        MutexLock done(mutex_);
        fd.reset();
        if (auto it = connections_.find(id); it != connections_.end()) {
          it->second.first = -1;
        }
        finished_.push_back(id);
        changed_.notify_all();
      })};
}

void RendezvousServer::join_finished() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mutex_);
    for (int id : finished_) {
      threads.push_back(std::move(connections_[id].second));
      connections_.erase(id);
    }
    finished_.clear();
  }
  for (auto& t : threads) t.join();
}

void RendezvousServer::serve(int fd, const std::string& peer, SignedHeader first) {
  try {
    serve_frames(fd, std::move(first));
  } catch (const RendezvousRejected& e) {
    reject(peer, e.what());
  } catch (const net::FrameError& e) {
    reject(peer, e.what());
  } catch (const net::ConnectionClosed&) {
  } catch (const Error& e) {
    log::debug("rendezvous: connection from ", peer, " ended: ", e.what());
  }
}

void RendezvousServer::serve_frames(int fd, SignedHeader header) {
  // Every frame's header is authenticated before its payload is read: the peer proved the secret
  // once, but a captured frame replayed on this connection must not make the server allocate.
  for (;;) {
    std::string sealed;
    try {
      sealed = net::read_bytes(fd, header.length, Clock::now() + options_.frame_timeout);
    } catch (const net::ConnectionClosed&) {
      throw net::FrameError("connection closed after a frame header");
    }
    RendezvousRequest request = open_request(secret_, sealed);
    check_fresh(request.timestamp_ms, request.nonce, "request");
    RendezvousResponse response = handle(request);
    if (request.op != RendezvousOp::kGet && response.status == RendezvousStatus::kOk &&
        options_.on_set) {
      options_.on_set(request.scope, request.key);
    }
    net::write_frame(fd, seal_response(secret_, response), Clock::now() + options_.frame_timeout);
    // An authenticated worker may stay idle for the whole job; once it speaks, it must finish.
    net::wait_readable(fd, Clock::time_point::max());
    std::string next =
        net::read_bytes(fd, kSignedHeaderSize, Clock::now() + options_.frame_timeout);
    header = open_signed_header(secret_, next, kMaxRendezvousFrame);
    check_fresh(header.timestamp_ms, header.nonce, "frame header");
  }
}

void RendezvousServer::reject(const std::string& peer, const std::string& reason) {
  MutexLock lock(mutex_);
  if (stopping_) return;  // connections cut by stop() are not attacks
  ++rejected_;
  changed_.notify_all();
  // The peer gets no answer (but a stale one: answer_stale) and no second try on this
  // connection. Rate-limited: a peer without
  // the secret can cause these lines at will.
  log::limited(log::Level::kWarning, "rendezvous-rejected", "rendezvous: rejected ", peer, ": ",
               reason);
}

void RendezvousServer::answer_stale(int fd, const SignedHeader& header,
                                    const std::string& why) const {
  // Signed, and tied to the header's nonce: a client knows the refusal is the server's. A
  // replayed header earns its sender a few bytes and the server's time, nothing else.
  RendezvousResponse refusal{.nonce = header.nonce,
                             .status = RendezvousStatus::kStale,
                             .value = "refused this worker's request: " + why};
  try {
    net::write_frame(fd, seal_response(secret_, refusal), Clock::now() + options_.frame_timeout);
  } catch (const Error& e) {
    log::debug("rendezvous: cannot tell a stale client why: ", e.what());
  }
}

void RendezvousServer::check_fresh(int64_t timestamp_ms, const std::string& nonce,
                                   const std::string& what) {
  int64_t now = unix_millis();
  int64_t window = std::chrono::milliseconds(kReplayWindow).count();
  if (auto stale = outside_replay_window(timestamp_ms))
    throw RendezvousRejected("stale " + what + ": " + *stale);
  MutexLock lock(mutex_);
  // Nonces older than the window can be forgotten: their requests are rejected as stale anyway.
  std::erase_if(seen_nonces_, [&](const auto& kv) { return now - kv.second > window; });
  if (!seen_nonces_.emplace(nonce, timestamp_ms).second) {
    throw RendezvousRejected("replayed " + what + " (nonce already used)");
  }
}

RendezvousResponse RendezvousServer::handle(const RendezvousRequest& request) {
  MutexLock lock(mutex_);
  if (stopping_) {
    return {.nonce = request.nonce,
            .status = RendezvousStatus::kStopping,
            .value = "the rendezvous server is stopping"};
  }
  RendezvousResponse ok{.nonce = request.nonce, .status = RendezvousStatus::kOk};
  RendezvousResponse mismatch{.nonce = request.nonce, .status = RendezvousStatus::kMismatch};
  switch (request.op) {
    case RendezvousOp::kGet:
      return handle_get(request);
    case RendezvousOp::kSet:
      set_locked(request.scope, request.key, request.value);
      return ok;
    case RendezvousOp::kCompareSet:
      return compare_and_set_locked(request) ? ok : mismatch;
    case RendezvousOp::kRemove:
      return remove_locked(request.scope, request.key) ? ok : mismatch;
  }
  return mismatch;  // open_request admits no other operation
}

RendezvousResponse RendezvousServer::handle_get(const RendezvousRequest& request) {
  auto wait = std::min(std::chrono::milliseconds(std::max<int64_t>(request.timeout_ms, 0)),
                       options_.max_get_wait);
  auto is_set = [&]() REQUIRES(mutex_) {
    auto it = scopes_.find(request.scope);
    return it != scopes_.end() && it->second.contains(request.key);
  };
  ++waiting_gets_;
  changed_.notify_all();
  bool found =
      changed_.wait_for(mutex_, wait, [&]() REQUIRES(mutex_) { return stopping_ || is_set(); });
  --waiting_gets_;
  RendezvousResponse response{.nonce = request.nonce};
  if (stopping_) {
    response.status = RendezvousStatus::kStopping;
    response.value = "the rendezvous server is stopping";
  } else if (!found) {
    response.status = RendezvousStatus::kTimeout;
    response.value =
        "key '" + request.key + "' was not set within " + std::to_string(wait.count()) + " ms";
    if (wait.count() < request.timeout_ms) response.value += " (the server's limit)";
  } else {
    response.value = scopes_[request.scope][request.key];
  }
  return response;
}

}  // namespace cohort::rendezvous
