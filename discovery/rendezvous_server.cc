#include "discovery/rendezvous_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/log.h"
#include "discovery/frame_io.h"

namespace cohort::discovery {
namespace {

std::string peer_name(const sockaddr_in& addr) {
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
}

}  // namespace

RendezvousServer::RendezvousServer(const std::string& host, std::string secret,
                                   RendezvousServerOptions options)
    : secret_(std::move(secret)), options_(options) {
  listener_ = listen_tcp(host, port_);
  acceptor_ = std::thread([this] { accept_loop(); });
}

RendezvousServer::~RendezvousServer() {
  stop();
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, connection] : connections_) threads.push_back(std::move(connection.second));
    connections_.clear();
  }
  for (auto& t : threads) t.join();
}

void RendezvousServer::stop() {
  std::lock_guard lock(mutex_);
  if (stopping_) return;
  stopping_ = true;
  // shutdown() rather than close(): it wakes the threads blocked reading these sockets, and the
  // descriptors stay theirs to close, so no number is reused under them. Only the reading side:
  // waiting GETs still answer "stopping" (each write bounded by frame_timeout).
  ::shutdown(listener_.get(), SHUT_RDWR);
  for (auto& [id, connection] : connections_) {
    if (connection.first >= 0) ::shutdown(connection.first, SHUT_RD);
  }
  changed_.notify_all();
}

void RendezvousServer::clear_scope(const std::string& scope) {
  std::lock_guard lock(mutex_);
  scopes_.erase(scope);
}

void RendezvousServer::set(const std::string& key, const std::string& value,
                           const std::string& scope) {
  std::lock_guard lock(mutex_);
  scopes_[scope][key] = value;
  changed_.notify_all();
}

std::optional<std::string> RendezvousServer::lookup(const std::string& key,
                                                    const std::string& scope) const {
  std::lock_guard lock(mutex_);
  auto it = scopes_.find(scope);
  if (it == scopes_.end()) return std::nullopt;
  auto value = it->second.find(key);
  if (value == it->second.end()) return std::nullopt;
  return value->second;
}

int RendezvousServer::rejected() const {
  std::lock_guard lock(mutex_);
  return rejected_;
}

bool RendezvousServer::contains(const std::string& key, const std::string& scope) const {
  std::lock_guard lock(mutex_);
  auto it = scopes_.find(scope);
  return it != scopes_.end() && it->second.contains(key);
}

bool RendezvousServer::await_waiting_gets(int n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return waiting_gets_ >= n; });
}

void RendezvousServer::accept_loop() {
  for (;;) {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    int fd = ::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
    int error = errno;
    join_finished();
    std::lock_guard lock(mutex_);
    if (stopping_) {
      if (fd >= 0) ::close(fd);
      return;
    }
    if (fd < 0) {
      // Out of descriptors or memory: back off instead of spinning on the same error.
      if (error != EINTR && error != ECONNABORTED) ::poll(nullptr, 0, 100);
      continue;
    }
    if (static_cast<int>(connections_.size()) >= options_.max_connections) {
      log::warning("rendezvous: refusing ", peer_name(addr), ": ", connections_.size(),
                   " connections are open already");
      ::close(fd);
      continue;
    }
    int id = next_connection_++;
    connections_[id] = {fd, std::thread([this, id, fd, peer = peer_name(addr)] {
                          serve(fd, peer);
                          std::lock_guard done(mutex_);
                          ::close(fd);
                          if (auto it = connections_.find(id); it != connections_.end()) {
                            it->second.first = -1;
                          }
                          finished_.push_back(id);
                        })};
  }
}

void RendezvousServer::join_finished() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    for (int id : finished_) {
      threads.push_back(std::move(connections_[id].second));
      connections_.erase(id);
    }
    finished_.clear();
  }
  for (auto& t : threads) t.join();
}

void RendezvousServer::serve(int fd, const std::string& peer) {
  try {
    serve_frames(fd, peer);
  } catch (const RendezvousRejected& e) {
    reject(peer, e.what());
  } catch (const FrameError& e) {
    reject(peer, e.what());
  } catch (const ConnectionClosed&) {
  } catch (const Error& e) {
    log::debug("rendezvous: connection from ", peer, " ended: ", e.what());
  }
}

void RendezvousServer::serve_frames(int fd, const std::string& peer) {
  // Until a connection has sent one authentic request it may not sit idle: unauthenticated
  // peers cannot hold threads for long. Authenticated workers keep theirs for the whole job.
  bool authenticated = false;
  for (;;) {
    auto idle_deadline =
        authenticated ? Clock::time_point::max() : Clock::now() + options_.frame_timeout;
    if (!wait_readable(fd, idle_deadline)) {
      throw FrameError("sent no request within " + std::to_string(options_.frame_timeout.count()) +
                       " ms of connecting");
    }
    std::string sealed = read_frame(fd, kMaxRendezvousFrame, Clock::now() + options_.frame_timeout);
    RendezvousRequest request = open_request(secret_, sealed);
    check_fresh(request);
    if (!authenticated) log::debug("rendezvous: ", peer, " authenticated");
    authenticated = true;
    RendezvousResponse response = handle(request);
    if (request.op == RendezvousOp::kSet && response.status == RendezvousStatus::kOk &&
        options_.on_set) {
      options_.on_set(request.scope, request.key);
    }
    write_frame(fd, seal_response(secret_, response), Clock::now() + options_.frame_timeout);
  }
}

void RendezvousServer::reject(const std::string& peer, const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (stopping_) return;  // connections cut by stop() are not attacks
  ++rejected_;
  // The peer gets no answer and no second try on this connection.
  log::warning("rendezvous: rejected a request from ", peer, ": ", reason);
}

void RendezvousServer::check_fresh(const RendezvousRequest& request) {
  int64_t now = unix_millis();
  int64_t window = std::chrono::milliseconds(kReplayWindow).count();
  if (std::llabs(now - request.timestamp_ms) > window) {
    throw RendezvousRejected("stale request: its timestamp is " +
                             std::to_string((now - request.timestamp_ms) / 1000) +
                             " s away from this server's clock (the window is ±" +
                             std::to_string(kReplayWindow.count()) + " s)");
  }
  std::lock_guard lock(mutex_);
  // Nonces older than the window can be forgotten: their requests are rejected as stale anyway.
  std::erase_if(seen_nonces_, [&](const auto& kv) { return now - kv.second > window; });
  if (!seen_nonces_.emplace(request.nonce, request.timestamp_ms).second) {
    throw RendezvousRejected("replayed request (nonce already used)");
  }
}

RendezvousResponse RendezvousServer::handle(const RendezvousRequest& request) {
  std::unique_lock lock(mutex_);
  if (stopping_) {
    return {.nonce = request.nonce,
            .status = RendezvousStatus::kStopping,
            .value = "the rendezvous server is stopping"};
  }
  if (request.op == RendezvousOp::kGet) return handle_get(request, lock);
  scopes_[request.scope][request.key] = request.value;
  changed_.notify_all();
  return {.nonce = request.nonce, .status = RendezvousStatus::kOk};
}

RendezvousResponse RendezvousServer::handle_get(const RendezvousRequest& request,
                                                std::unique_lock<std::mutex>& lock) {
  auto wait = std::min(std::chrono::milliseconds(std::max<int64_t>(request.timeout_ms, 0)),
                       options_.max_get_wait);
  auto is_set = [&] {
    auto it = scopes_.find(request.scope);
    return it != scopes_.end() && it->second.contains(request.key);
  };
  ++waiting_gets_;
  changed_.notify_all();
  bool found = changed_.wait_for(lock, wait, [&] { return stopping_ || is_set(); });
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

}  // namespace cohort::discovery
