#include "discovery/rendezvous_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>

#include "core/log.h"
#include "discovery/frame_io.h"

namespace cohort::discovery {
namespace {

// Once a frame has started, the rest must follow promptly: a stalled client only holds its own
// connection's thread, and only for this long.
constexpr std::chrono::seconds kFrameTimeout{10};

std::string peer_name(const sockaddr_in& addr) {
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
}

}  // namespace

RendezvousServer::RendezvousServer(const std::string& host, std::string secret)
    : secret_(std::move(secret)) {
  listener_ = listen_tcp(host, port_);
  acceptor_ = std::thread([this] { accept_loop(); });
}

RendezvousServer::~RendezvousServer() {
  stop();
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& t : connections_) t.join();
}

void RendezvousServer::stop() {
  std::lock_guard lock(mutex_);
  if (stopping_) return;
  stopping_ = true;
  ::shutdown(listener_.get(), SHUT_RDWR);
  for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  changed_.notify_all();
}

int RendezvousServer::rejected() const {
  std::lock_guard lock(mutex_);
  return rejected_;
}

bool RendezvousServer::contains(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return values_.contains(key);
}

void RendezvousServer::accept_loop() {
  for (;;) {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    int fd = ::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
    std::lock_guard lock(mutex_);
    if (stopping_) {
      if (fd >= 0) ::close(fd);
      return;
    }
    if (fd < 0) continue;
    if (static_cast<int>(open_fds_.size()) >= kMaxConnections) {
      log::warning("rendezvous: refusing ", peer_name(addr), ": too many connections");
      ::close(fd);
      continue;
    }
    open_fds_.insert(fd);
    connections_.emplace_back([this, fd, peer = peer_name(addr)] { serve(fd, peer); });
  }
}

void RendezvousServer::serve(int fd, std::string peer) {
  for (;;) {
    try {
      if (!wait_readable(fd, Clock::time_point::max())) break;
      std::string sealed = read_frame(fd, kMaxRendezvousFrame, Clock::now() + kFrameTimeout);
      RendezvousRequest request = open_request(secret_, sealed);
      check_fresh(request);
      RendezvousResponse response = handle(request);
      write_frame(fd, seal_response(secret_, response), Clock::now() + kFrameTimeout);
    } catch (const RendezvousRejected& e) {
      log::warning("rendezvous: rejected a request from ", peer, ": ", e.what());
      std::lock_guard lock(mutex_);
      ++rejected_;
      break;  // an unauthenticated peer gets no answer, and no second try on this connection
    } catch (const Error& e) {
      std::lock_guard lock(mutex_);
      if (!stopping_) log::debug("rendezvous: connection from ", peer, " ended: ", e.what());
      break;
    }
  }
  std::lock_guard lock(mutex_);
  open_fds_.erase(fd);
  ::close(fd);
}

void RendezvousServer::check_fresh(const RendezvousRequest& request) {
  int64_t now = unix_millis();
  int64_t window = std::chrono::milliseconds(kReplayWindow).count();
  if (std::llabs(now - request.timestamp_ms) > window) {
    throw RendezvousRejected("stale request: its timestamp is " +
                             std::to_string((now - request.timestamp_ms) / 1000) +
                             " s away from this server's clock");
  }
  std::lock_guard lock(mutex_);
  // Nonces older than the window can be forgotten: their requests are rejected as stale anyway.
  std::erase_if(seen_nonces_, [&](const auto& kv) { return now - kv.second > window; });
  if (!seen_nonces_.emplace(request.nonce, request.timestamp_ms).second) {
    throw RendezvousRejected("replayed request (nonce already used)");
  }
}

RendezvousResponse RendezvousServer::handle(const RendezvousRequest& request) {
  RendezvousResponse response{.nonce = request.nonce};
  std::unique_lock lock(mutex_);
  if (request.op == RendezvousOp::kSet) {
    values_[request.key] = request.value;
    changed_.notify_all();
    response.ok = true;
    return response;
  }
  auto wait = std::chrono::milliseconds(std::clamp<int64_t>(request.timeout_ms, 0, kMaxGetWaitMs));
  bool found =
      changed_.wait_for(lock, wait, [&] { return stopping_ || values_.contains(request.key); });
  if (found && !stopping_) {
    response.ok = true;
    response.value = values_.at(request.key);
  } else {
    response.value = stopping_ ? "the rendezvous server is stopping"
                               : "key '" + request.key + "' was not set within " +
                                     std::to_string(wait.count()) + " ms";
  }
  return response;
}

}  // namespace cohort::discovery
