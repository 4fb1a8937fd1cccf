#include "rendezvous/frame_io.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "base/net.h"
#include "cohort/errors.h"
#include "rendezvous/hmac.h"

namespace cohort::rendezvous {
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

namespace {
void write_all(int fd, std::string_view out, Clock::time_point deadline) {
  size_t done = 0;
  while (done < out.size()) {
    if (!wait_for(fd, POLLOUT, deadline)) throw Error("timed out sending a rendezvous frame");
    ssize_t n = ::send(fd, out.data() + done, out.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) throw Error(std::string("sending a rendezvous frame: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}
}  // namespace

void write_frame(int fd, std::string_view payload, Clock::time_point deadline) {
  uint32_t len = htonl(static_cast<uint32_t>(payload.size()));
  std::string out(reinterpret_cast<const char*>(&len), sizeof len);
  out += payload;
  write_all(fd, out, deadline);
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

}  // namespace cohort::rendezvous

namespace cohort::rendezvous {
namespace {

// Distinguishes a header's MAC from any other MAC made with the job secret.
constexpr std::string_view kHeaderLabel = "cohort signed frame header v1";
constexpr size_t kSignedPart = kSignedHeaderSize - kMacSize;

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t get_be(std::string_view in, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[pos + i]);
  return v;
}

std::string header_mac(std::string_view secret, std::string_view signed_part) {
  std::string data(kHeaderLabel);
  data += signed_part;
  return hmac_sha256(secret, data);
}

}  // namespace

std::string signed_header(std::string_view secret, uint32_t payload_size, int64_t timestamp_ms,
                          std::string_view nonce) {
  std::string header;
  put_be(header, payload_size, 4);
  put_be(header, static_cast<uint64_t>(timestamp_ms), 8);
  header += nonce.substr(0, 16);
  header.resize(kSignedPart, '\0');
  return header + header_mac(secret, header);
}

void write_signed_frame(int fd, std::string_view secret, std::string_view payload,
                        Clock::time_point deadline) {
  using namespace std::chrono;
  int64_t now = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  std::string out =
      signed_header(secret, static_cast<uint32_t>(payload.size()), now, random_bytes(16));
  out += payload;
  write_all(fd, out, deadline);
}

SignedHeader open_signed_header(std::string_view secret, std::string_view header, size_t max_size) {
  if (header.size() != kSignedHeaderSize) throw FrameError("truncated frame header");
  std::string_view signed_part = header.substr(0, kSignedPart);
  if (!constant_time_equal(header_mac(secret, signed_part), header.substr(kSignedPart))) {
    throw FrameError("frame header with a wrong MAC (not signed with the job secret)");
  }
  SignedHeader out{.length = static_cast<uint32_t>(get_be(header, 0, 4)),
                   .timestamp_ms = static_cast<int64_t>(get_be(header, 4, 8)),
                   .nonce = std::string(header.substr(12, 16))};
  if (out.length > max_size) {
    throw FrameError("frame of " + std::to_string(out.length) + " bytes exceeds the limit of " +
                     std::to_string(max_size));
  }
  return out;
}

std::string read_bytes(int fd, size_t n, Clock::time_point deadline) {
  std::string out(n, '\0');
  size_t got = read_exact(fd, out.data(), n, deadline);
  if (got == 0 && n > 0) throw ConnectionClosed("connection closed");
  if (got < n) {
    throw FrameError("connection closed after " + std::to_string(got) + " of " + std::to_string(n) +
                     " bytes");
  }
  return out;
}

}  // namespace cohort::rendezvous
