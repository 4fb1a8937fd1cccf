// A loopback proxy in front of a real etcd that loses the last watch of the first few /v3/watch
// requests, as etcd 3.4's HTTP gateway does now and then under load (several watches asked for in
// one request body, the last ones never created). Every other byte passes unchanged, both ways.
// For the test that an agent's watch asks again for watches etcd did not create.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "base/framed_socket.h"

namespace cohort::testing {

class WatchDroppingProxy {
 public:
  // Forwards to etcd at 127.0.0.1:`etcd_port`; loses the last watch of the first `drops` watch
  // requests that ask for more than one.
  WatchDroppingProxy(int etcd_port, int drops)
      : etcd_port_(etcd_port), drops_(drops), listener_(net::listen_tcp("127.0.0.1", port_)) {
    thread_ = std::thread([this] { serve(); });
  }
  ~WatchDroppingProxy() {
    stopping_ = true;
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
    for (auto& t : connections_) t.join();
  }
  WatchDroppingProxy(const WatchDroppingProxy&) = delete;
  WatchDroppingProxy& operator=(const WatchDroppingProxy&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Watches lost so far.
  int dropped() const { return dropped_; }

 private:
  void serve() {
    for (;;) {
      int client = ::accept(listener_.get(), nullptr, nullptr);
      if (client < 0) return;
      connections_.emplace_back([this, client] { relay(Fd(client)); });
    }
  }

  // Reads the first request whole, forwards it (without its last watch, if it is to lose one),
  // then passes bytes both ways until either side closes.
  void relay(Fd client) {
    std::string request = read_request(client.get());
    if (request.empty()) return;
    Fd etcd = net::connect_tcp("127.0.0.1", etcd_port_,
                               std::chrono::steady_clock::now() + std::chrono::seconds(5));
    if (!write_all(etcd.get(), lose_last_watch(request))) return;
    pass(client.get(), etcd.get());
  }

  std::string read_request(int fd) {
    std::string request;
    char buffer[4096];
    size_t end = std::string::npos;
    bool continued = false;
    while (end == std::string::npos || request.size() < end + 4 + body_length(request)) {
      if (end != std::string::npos && !continued && expects_continue(request)) {
        continued = write_all(fd, "HTTP/1.1 100 Continue\r\n\r\n");  // curl waits for it
      }
      pollfd in{fd, POLLIN, 0};
      if (::poll(&in, 1, 5000) <= 0) return "";
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) return "";
      request.append(buffer, static_cast<size_t>(n));
      end = request.find("\r\n\r\n");
    }
    return request;
  }

  // `request` with its last create_request cut from the body (and the Expect header answered
  // here removed), if it is a watch request for more than one range and drops are left.
  std::string lose_last_watch(const std::string& request) {
    size_t end = request.find("\r\n\r\n");
    std::string head = request.substr(0, end);
    std::string body = request.substr(end + 4);
    size_t last = body.rfind("{\"create_request\"");
    if (!head.starts_with("POST /v3/watch ") || last == 0 || last == std::string::npos ||
        dropped_ >= drops_) {
      return strip_expect(head) + "\r\n\r\n" + body;
    }
    ++dropped_;
    body.resize(last);
    std::string out;
    for (const auto& line : lines(strip_expect(head))) {
      bool length = line.starts_with("Content-Length:") || line.starts_with("content-length:");
      out += (length ? "Content-Length: " + std::to_string(body.size()) : line) + "\r\n";
    }
    return out + "\r\n" + body;
  }

  void pass(int client, int etcd) {
    char buffer[16384];
    while (!stopping_) {
      pollfd fds[2] = {{client, POLLIN, 0}, {etcd, POLLIN, 0}};
      if (::poll(fds, 2, 200) < 0) return;
      for (int i = 0; i < 2; ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
        if (n <= 0 || !write_all(fds[1 - i].fd, std::string(buffer, static_cast<size_t>(n)))) {
          return;
        }
      }
    }
  }

  static bool write_all(int fd, const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        pollfd out{fd, POLLOUT, 0};
        if (::poll(&out, 1, 5000) <= 0) return false;
        continue;
      }
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  static std::vector<std::string> lines(const std::string& head) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at <= head.size()) {
      size_t next = head.find("\r\n", at);
      if (next == std::string::npos) next = head.size();
      out.push_back(head.substr(at, next - at));
      at = next + 2;
    }
    return out;
  }

  static bool expects_continue(const std::string& request) {
    return request.find("Expect: 100-continue") != std::string::npos;
  }

  static std::string strip_expect(const std::string& head) {
    std::string out;
    for (const auto& line : lines(head)) {
      if (!line.starts_with("Expect:")) out += (out.empty() ? "" : "\r\n") + line;
    }
    return out;
  }

  static size_t body_length(const std::string& request) {
    size_t at = request.find("Content-Length: ");
    if (at == std::string::npos) at = request.find("content-length: ");
    return at == std::string::npos ? 0 : std::stoul(request.substr(at + 16));
  }

  const int etcd_port_;
  const int drops_;
  int port_ = 0;
  Fd listener_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> dropped_{0};
  std::vector<std::thread> connections_;  // used by the serving thread alone until it is joined
  std::thread thread_;
};

}  // namespace cohort::testing
