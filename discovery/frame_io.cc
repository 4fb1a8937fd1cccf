#include "discovery/frame_io.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "cohort/errors.h"

namespace cohort::discovery {
namespace {

int millis_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(std::min<long long>(left.count(), 1 << 30));
}

bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, millis_until(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throw Error(std::string("poll: ") + std::strerror(errno));
  }
}

sockaddr_in resolve(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0) {
    throw Error("cannot resolve '" + host + "': " + gai_strerror(rc));
  }
  sockaddr_in addr = *reinterpret_cast<sockaddr_in*>(found->ai_addr);
  freeaddrinfo(found);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

}  // namespace

bool wait_readable(int fd, Clock::time_point deadline) {
  return wait_for(fd, POLLIN, deadline);
}

Fd connect_tcp(const std::string& host, int port, Clock::time_point deadline) {
  sockaddr_in addr = resolve(host, port);
  for (;;) {
    Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      int one = 1;
      setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    if (errno != ECONNREFUSED || Clock::now() >= deadline) {
      throw Error("cannot connect to " + host + ":" + std::to_string(port) + ": " +
                  std::strerror(errno));
    }
    ::poll(nullptr, 0, 10);
  }
}

Fd listen_tcp(const std::string& host, int& port) {
  sockaddr_in addr = resolve(host, port);
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd.get(), 512) != 0) {
    throw Error("cannot listen on " + host + ": " + std::strerror(errno));
  }
  socklen_t len = sizeof addr;
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  port = ntohs(addr.sin_port);
  return fd;
}

void write_frame(int fd, std::string_view payload, Clock::time_point deadline) {
  uint32_t len = static_cast<uint32_t>(payload.size());
  std::string out(reinterpret_cast<const char*>(&len), sizeof len);
  out += payload;
  size_t done = 0;
  while (done < out.size()) {
    if (!wait_for(fd, POLLOUT, deadline)) throw Error("timed out sending a rendezvous frame");
    ssize_t n = ::send(fd, out.data() + done, out.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) throw Error(std::string("sending a rendezvous frame: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

namespace {
void read_exact(int fd, char* data, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    if (!wait_for(fd, POLLIN, deadline)) throw Error("timed out reading a rendezvous frame");
    ssize_t got = ::recv(fd, data, n, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (got == 0) throw Error("connection closed");
    if (got < 0) throw Error(std::string("reading a rendezvous frame: ") + std::strerror(errno));
    data += got;
    n -= static_cast<size_t>(got);
  }
}
}  // namespace

std::string read_frame(int fd, size_t max_size, Clock::time_point deadline) {
  uint32_t len = 0;
  read_exact(fd, reinterpret_cast<char*>(&len), sizeof len, deadline);
  if (len > max_size) {
    throw Error("rendezvous frame of " + std::to_string(len) + " bytes exceeds the limit of " +
                std::to_string(max_size));
  }
  std::string payload(len, '\0');
  read_exact(fd, payload.data(), len, deadline);
  return payload;
}

}  // namespace cohort::discovery
