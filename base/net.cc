#include "base/net.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/fd.h"
#include "cohort/errors.h"

namespace cohort::net {

sockaddr_in resolve_ipv4(const std::string& host, int port) {
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

std::string address_text(const sockaddr_in& addr) {
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
}

std::string local_address(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return address_text(addr);
}

std::string local_host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

namespace {

std::string dotted(const in_addr& addr) {
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr, text, sizeof text);
  return text;
}

}  // namespace

std::string interface_ipv4(const std::string& name) {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) throw Error(std::string("getifaddrs: ") + std::strerror(errno));
  bool exists = false;
  std::string found;
  for (ifaddrs* a = all; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_name == nullptr || name != a->ifa_name) continue;
    exists = true;
    if (a->ifa_addr != nullptr && a->ifa_addr->sa_family == AF_INET) {
      found = dotted(reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr);
    }
  }
  freeifaddrs(all);
  if (!exists) throw Error("there is no network interface '" + name + "' on this host");
  if (found.empty()) throw Error("network interface '" + name + "' has no IPv4 address");
  return found;
}

std::string local_ipv4_towards(const std::string& host) {
  sockaddr_in peer = resolve_ipv4(host, 9);  // any port: a UDP connect sends nothing
  Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid() || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&peer), sizeof peer) != 0) {
    throw Error("no route from this machine to '" + host + "': " + std::strerror(errno));
  }
  sockaddr_in local{};
  socklen_t len = sizeof local;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
    throw Error("getsockname towards '" + host + "': " + std::strerror(errno));
  }
  return dotted(local.sin_addr);
}

}  // namespace cohort::net
