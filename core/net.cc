#include "core/net.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

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

std::string local_host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace cohort::net
