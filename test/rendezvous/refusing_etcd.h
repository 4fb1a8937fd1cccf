// A stand-in for etcd that answers every request, but with an error (by default HTTP 400, as etcd
// answers a request it refuses), except a lease grant, which it grants. For the tests that an
// error etcd answers is reported at once, never waited out as an etcd that cannot be reached, and
// that an answer meaning "not now" (e.g. 429, overloaded) is waited out.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <utility>

#include "base/fd.h"
#include "base/framed_socket.h"

namespace cohort::testing {

class RefusingEtcd {
 public:
  // `status`: the HTTP status line of every refusal.
  explicit RefusingEtcd(std::string status = "400 Bad Request")
      : status_(std::move(status)), listener_(net::listen_tcp("127.0.0.1", port_)) {
    thread_ = std::thread([this] { serve(); });
  }
  ~RefusingEtcd() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
  }
  RefusingEtcd(const RefusingEtcd&) = delete;
  RefusingEtcd& operator=(const RefusingEtcd&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Requests answered with an error so far.
  int refused() const { return refused_; }

 private:
  void serve() {
    for (;;) {
      Fd client(::accept(listener_.get(), nullptr, nullptr));
      if (!client.valid()) return;
      answer(client.get());
    }
  }

  // Reads one request (headers and a Content-Length body) and answers it; closes the connection.
  void answer(int fd) {
    std::string request;
    char buffer[4096];
    size_t end = std::string::npos;
    while (end == std::string::npos || request.size() < end + 4 + body_length(request)) {
      pollfd in{fd, POLLIN, 0};
      if (::poll(&in, 1, 5000) <= 0) return;
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) return;
      request.append(buffer, static_cast<size_t>(n));
      end = request.find("\r\n\r\n");
    }
    bool grant = request.starts_with("POST /v3/lease/grant ");
    std::string body =
        grant ? R"({"ID":"7","TTL":"3"})"
              : R"({"error":"refused by the test","code":3,"message":"refused by the test"})";
    if (!grant) ++refused_;
    std::string response =
        "HTTP/1.1 " + (grant ? std::string("200 OK") : status_) +
        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\nConnection: close\r\n\r\n" + body;
    [[maybe_unused]] ssize_t n = ::write(fd, response.data(), response.size());
  }

  static size_t body_length(const std::string& request) {
    size_t at = request.find("Content-Length: ");
    if (at == std::string::npos) at = request.find("content-length: ");
    return at == std::string::npos ? 0 : std::stoul(request.substr(at + 16));
  }

  std::string status_;
  int port_ = 0;
  Fd listener_;
  std::atomic<int> refused_{0};
  std::thread thread_;
};

}  // namespace cohort::testing
