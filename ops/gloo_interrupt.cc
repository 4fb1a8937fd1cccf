#include "ops/gloo_interrupt.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/address.h>
#include <cstring>
#include <string>

#include "base/decimal.h"
#include "base/log.h"

namespace cohort::ops {
namespace {

bool same_endpoint(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port &&
           std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof x.sin6_addr) == 0;
  }
  return false;
}

bool local_endpoint(int fd, sockaddr_storage& out) {
  socklen_t len = sizeof out;
  return getsockname(fd, reinterpret_cast<sockaddr*>(&out), &len) == 0;
}

bool connected(int fd) {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  return getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0;
}

// The local endpoint of each connected pair: Gloo sets a pair's address to its socket's own
// (getsockname) once it connects, and every pair has a port of its own.
std::vector<sockaddr_storage> pair_endpoints(gloo::Context& context) {
  std::vector<sockaddr_storage> endpoints;
  for (int peer = 0; peer < context.size; ++peer) {
    if (peer == context.rank) continue;
    auto& pair = context.getPair(peer);
    const auto* address =
        pair ? dynamic_cast<const gloo::transport::tcp::Address*>(&pair->address()) : nullptr;
    if (address != nullptr) endpoints.push_back(address->getSockaddr());
  }
  return endpoints;
}

// A duplicate of the connected socket whose local endpoint is `endpoint`, or an invalid Fd.
Fd duplicate_socket_at(const sockaddr_storage& endpoint) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return Fd();
  Fd found;
  while (dirent* entry = readdir(dir)) {
    auto number = parse_decimal<int>(entry->d_name, 0);  // "." and ".." are none
    if (!number || *number == dirfd(dir)) continue;
    int fd = *number;
    // Check the duplicate, not `fd`: another thread may close and reuse `fd` meanwhile.
    Fd copy(fcntl(fd, F_DUPFD_CLOEXEC, 0));
    sockaddr_storage local{};
    if (copy.valid() && local_endpoint(copy.get(), local) && same_endpoint(local, endpoint) &&
        connected(copy.get())) {
      found = std::move(copy);
      break;
    }
  }
  closedir(dir);
  return found;
}

}  // namespace

GlooInterrupter::GlooInterrupter(gloo::Context& context) {
  for (const auto& endpoint : pair_endpoints(context)) {
    Fd socket = duplicate_socket_at(endpoint);
    if (socket.valid()) {
      sockets_.push_back(std::move(socket));
    } else {
      log::warning("Gloo rank ", context.rank,
                   ": a pair's socket was not found; a failure elsewhere may reach this rank only "
                   "at COHORT_TIMEOUT_SECONDS");
    }
  }
}

void GlooInterrupter::interrupt() const {
  for (const auto& socket : sockets_) ::shutdown(socket.get(), SHUT_RDWR);
}

}  // namespace cohort::ops
