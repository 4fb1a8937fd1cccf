// A real etcd server (Debian's etcd-server) for tests: one member on loopback ports of its own, in
// a temporary data directory, killed and removed when the object goes. Started once per test
// binary by etcd_server() and shared by its tests, which keep apart by key prefix.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/etcd_client.h"

namespace cohort::testing {

// A loopback port that refuses connections for as long as this object lives: bound, never
// listening, so no other process can take it (a free_port() could be taken by a parallel test's
// etcd while a client retries it).
class ClosedPort {
 public:
  ClosedPort() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~ClosedPort() { ::close(fd_); }
  ClosedPort(const ClosedPort&) = delete;
  ClosedPort& operator=(const ClosedPort&) = delete;
  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_;
  int port_ = 0;
};

// A port that was free a moment ago (the kernel hands out ephemeral ports in turn).
inline int free_port() {
  return ClosedPort().port();
}

class EtcdServer {
 public:
  // Ports come from free_port(), which another process can take before etcd binds them (tests run
  // in parallel, other jobs start etcds too): an etcd that exits at once is started again on new
  // ports, at most kAttempts times in all.
  EtcdServer() {
    char pattern[] = "/tmp/cohort-etcd-XXXXXX";
    if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    for (int attempt = 1;; ++attempt) {
      start();
      try {
        wait_ready();
        return;
      } catch (const std::exception&) {
        bool exited = ::waitpid(pid_, nullptr, WNOHANG) != 0;
        if (!exited) ::kill(pid_, SIGKILL);  // its data directory stays, for the log
        ::waitpid(pid_, nullptr, 0);
        if (!exited || attempt == kAttempts) throw;
        std::error_code ignored;
        std::filesystem::remove_all(dir_ + "/data", ignored);
      }
    }
  }
  ~EtcdServer() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;

  const std::string& endpoint() const { return endpoint_; }

 private:
  // Until etcd answers a read, at most 30 s (it starts in well under a second here). An etcd that
  // is not installed or exits at once fails here, naming its log.
  void wait_ready() {
    rendezvous::EtcdClient probe({.endpoints = {endpoint_}, .timeout = std::chrono::seconds(1)});
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      try {
        probe.call("/v3/kv/range", {{"key", rendezvous::base64("probe")}});
        return;
      } catch (const std::exception& e) {
        if (std::chrono::steady_clock::now() > give_up || ::waitpid(pid_, nullptr, WNOHANG) != 0) {
          throw std::runtime_error("etcd did not start (apt-get install etcd-server; its log: " +
                                   dir_ + "/etcd.log): " + e.what());
        }
      }
      // Not an ordering: a bounded retry of a server that is still starting.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  static constexpr int kAttempts = 3;

  // Starts etcd on two ports that were free a moment ago; its log goes to dir_/etcd.log.
  void start() {
    std::string client = "http://127.0.0.1:" + std::to_string(free_port());
    std::string peer = "http://127.0.0.1:" + std::to_string(free_port());
    std::vector<std::string> args = {"etcd",
                                     "--name=test",
                                     "--data-dir=" + dir_ + "/data",
                                     "--listen-client-urls=" + client,
                                     "--advertise-client-urls=" + client,
                                     "--listen-peer-urls=" + peer,
                                     "--initial-advertise-peer-urls=" + peer,
                                     "--initial-cluster=test=" + peer,
                                     "--logger=zap",
                                     "--log-outputs=" + dir_ + "/etcd.log"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a test that crashes leaves no etcd behind
      ::execvp("etcd", argv.data());
      ::_exit(127);
    }
    if (pid_ < 0) throw std::runtime_error("fork failed");
    endpoint_ = client;
  }

  std::string dir_;
  std::string endpoint_;
  pid_t pid_ = -1;
};

// The test binary's etcd, started on first use.
inline EtcdServer& etcd_server() {
  static EtcdServer server;
  return server;
}

}  // namespace cohort::testing
