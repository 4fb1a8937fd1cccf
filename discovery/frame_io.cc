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
#include "core/net.h"

namespace cohort::discovery {
namespace {

// poll()'s timeout; time_point::max() means no deadline (-1) rather than an overflow.
int millis_until(Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) return -1;
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

}  // namespace

bool wait_readable(int fd, Clock::time_point deadline) {
  return wait_for(fd, POLLIN, deadline);
}

namespace {
// One non-blocking connect attempt bounded by `deadline`; returns 0 or the errno that failed it.
int try_connect(int fd, const sockaddr_in& addr, Clock::time_point deadline) {
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  if (!wait_for(fd, POLLOUT, deadline)) return ETIMEDOUT;
  int error = 0;
  socklen_t len = sizeof error;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
  return error;
}
}  // namespace

Fd connect_tcp(const std::string& host, int port, Clock::time_point deadline) {
  sockaddr_in addr = net::resolve_ipv4(host, port);
  for (;;) {
    Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    int error = try_connect(fd.get(), addr, deadline);
    if (error == 0) {
      int one = 1;
      setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    // A refused connection may be a server still starting: retry briefly until the deadline.
    if (error != ECONNREFUSED || Clock::now() >= deadline) {
      throw Error("cannot connect to " + host + ":" + std::to_string(port) + ": " +
                  std::strerror(error));
    }
    ::poll(nullptr, 0, 20);
  }
}

Fd listen_tcp(const std::string& host, int& port) {
  sockaddr_in addr = net::resolve_ipv4(host, port);
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
  uint32_t len = htonl(static_cast<uint32_t>(payload.size()));
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
// Returns how many bytes arrived before a clean end of stream (n when all did).
size_t read_exact(int fd, char* data, size_t n, Clock::time_point deadline) {
  size_t done = 0;
  while (done < n) {
    if (!wait_for(fd, POLLIN, deadline)) throw FrameError("timed out reading a rendezvous frame");
    ssize_t got = ::recv(fd, data + done, n - done, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (got == 0) return done;
    if (got < 0) throw Error(std::string("reading a rendezvous frame: ") + std::strerror(errno));
    done += static_cast<size_t>(got);
  }
  return done;
}
}  // namespace

std::string read_frame(int fd, size_t max_size, Clock::time_point deadline) {
  uint32_t len = 0;
  size_t got = read_exact(fd, reinterpret_cast<char*>(&len), sizeof len, deadline);
  if (got == 0) throw ConnectionClosed("connection closed");
  if (got < sizeof len) throw FrameError("connection closed inside a frame's length");
  len = ntohl(len);
  if (len > max_size) {
    throw FrameError("frame of " + std::to_string(len) + " bytes exceeds the limit of " +
                     std::to_string(max_size));
  }
  std::string payload(len, '\0');
  if (read_exact(fd, payload.data(), len, deadline) < len) {
    throw FrameError("connection closed inside a frame of " + std::to_string(len) + " bytes");
  }
  return payload;
}

}  // namespace cohort::discovery
