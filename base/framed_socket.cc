#include "base/framed_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/cancellation.h"
#include "base/net.h"

namespace cohort::net {
namespace {

using std::chrono::milliseconds;

// How long a connect refused by a listener that is not up yet waits before it tries again.
constexpr milliseconds kRetryConnect{10};

std::string errno_text() {
  return std::strerror(errno);
}

bool wait_for(int fd, short events, SteadyClock::time_point deadline, const Cancellation* cancel) {
  std::vector<pollfd> fds{{fd, events, 0}};
  return poll_until(fds, deadline, cancel);
}

// One connect attempt bounded by `deadline`; 0 or the errno that failed it.
int try_connect(int fd, const sockaddr_in& addr, SteadyClock::time_point deadline,
                const Cancellation* cancel) {
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  if (!wait_for(fd, POLLOUT, deadline, cancel)) return ETIMEDOUT;
  int error = 0;
  socklen_t len = sizeof error;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
  return error;
}

// Returns how many bytes arrived before a clean end of stream (n when all did).
size_t read_exact(int fd, char* data, size_t n, SteadyClock::time_point deadline) {
  size_t done = 0;
  while (done < n) {
    if (!wait_readable(fd, deadline)) throw FrameError("timed out reading a frame");
    ssize_t got = ::recv(fd, data + done, n - done, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (got == 0) return done;
    if (got < 0) throw Error("reading a frame: " + errno_text());
    done += static_cast<size_t>(got);
  }
  return done;
}

std::string frame_header(size_t length) {
  uint32_t be = htonl(static_cast<uint32_t>(length));
  return {reinterpret_cast<const char*>(&be), sizeof be};
}

}  // namespace

Fd connect_tcp(const std::string& host, int port, SteadyClock::time_point deadline,
               const Cancellation* cancel) {
  sockaddr_in addr = resolve_ipv4(host, port);
  for (;;) {
    throw_if_cancelled(cancel);
    Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    int error = try_connect(fd.get(), addr, deadline, cancel);
    if (error == 0) {
      set_nodelay(fd.get());
      return fd;
    }
    if (error != ECONNREFUSED || SteadyClock::now() >= deadline) {
      throw Error("cannot connect to " + host + ":" + std::to_string(port) + ": " +
                  std::strerror(error));
    }
    std::vector<pollfd> none;
    poll_until(none, std::min(deadline, SteadyClock::now() + kRetryConnect), cancel);
  }
}

Fd listen_tcp(const std::string& host, int& port, int backlog) {
  sockaddr_in addr = resolve_ipv4(host, port);
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd.get(), backlog) != 0) {
    throw Error("cannot listen on " + host + ": " + errno_text());
  }
  socklen_t len = sizeof addr;
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  port = ntohs(addr.sin_port);
  return fd;
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool poll_until(std::vector<pollfd>& fds, SteadyClock::time_point deadline,
                const Cancellation* cancel) {
  fds.push_back({cancel_fd(cancel), POLLIN, 0});
  int rc;
  do {
    rc = ::poll(fds.data(), fds.size(), poll_millis(deadline));
  } while (rc < 0 && errno == EINTR);
  fds.pop_back();
  if (rc < 0) throw Error("poll: " + errno_text());
  throw_if_cancelled(cancel);
  return rc > 0;
}

bool wait_readable(int fd, SteadyClock::time_point deadline, const Cancellation* cancel) {
  return wait_for(fd, POLLIN, deadline, cancel);
}

bool wait_writable(int fd, SteadyClock::time_point deadline, const Cancellation* cancel) {
  return wait_for(fd, POLLOUT, deadline, cancel);
}

void write_all(int fd, std::string_view bytes, SteadyClock::time_point deadline,
               const Cancellation* cancel) {
  size_t done = 0;
  while (done < bytes.size()) {
    if (!wait_writable(fd, deadline, cancel)) throw Error("timed out sending a frame");
    ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) throw Error("sending a frame: " + errno_text());
    done += static_cast<size_t>(n);
  }
}

void write_frame(int fd, std::string_view payload, SteadyClock::time_point deadline,
                 const Cancellation* cancel) {
  write_all(fd, frame_header(payload.size()) + std::string(payload), deadline, cancel);
}

std::string read_frame(int fd, size_t max_size, SteadyClock::time_point deadline) {
  std::byte header[kFrameHeaderSize];
  size_t got = read_exact(fd, reinterpret_cast<char*>(header), sizeof header, deadline);
  if (got == 0) throw ConnectionClosed("connection closed");
  if (got < sizeof header) throw FrameError("connection closed inside a frame's length");
  uint32_t len = frame_length(header);
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

std::string read_bytes(int fd, size_t n, SteadyClock::time_point deadline) {
  std::string out(n, '\0');
  size_t got = read_exact(fd, out.data(), n, deadline);
  if (got == 0 && n > 0) throw ConnectionClosed("connection closed");
  if (got < n) {
    throw FrameError("connection closed after " + std::to_string(got) + " of " + std::to_string(n) +
                     " bytes");
  }
  return out;
}

uint32_t frame_length(const std::byte* header) {
  uint32_t be;
  std::memcpy(&be, header, sizeof be);
  return ntohl(be);
}

void append_frame(std::vector<std::byte>& out, std::span<const std::byte> payload) {
  std::string header = frame_header(payload.size());
  auto* h = reinterpret_cast<const std::byte*>(header.data());
  out.insert(out.end(), h, h + header.size());
  out.insert(out.end(), payload.begin(), payload.end());
}

std::vector<std::vector<std::byte>> take_frames(std::vector<std::byte>& received, size_t max_size) {
  std::vector<std::vector<std::byte>> frames;
  size_t pos = 0;
  while (received.size() - pos >= kFrameHeaderSize) {
    uint32_t len = frame_length(received.data() + pos);
    if (len > max_size) {
      throw FrameError("frame of " + std::to_string(len) + " bytes exceeds the limit of " +
                       std::to_string(max_size));
    }
    if (received.size() - pos - kFrameHeaderSize < len) break;
    auto begin = received.begin() + static_cast<std::ptrdiff_t>(pos + kFrameHeaderSize);
    frames.emplace_back(begin, begin + len);
    pos += kFrameHeaderSize + len;
  }
  received.erase(received.begin(), received.begin() + static_cast<std::ptrdiff_t>(pos));
  return frames;
}

}  // namespace cohort::net
