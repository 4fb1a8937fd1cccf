// Small socket helpers shared by the runtime's control channel and the launcher's rendezvous.
#pragma once

#include <netinet/in.h>

#include <string>

namespace cohort::net {

// The IPv4 address of `host` (a name or a dotted address) with `port`; throws cohort::Error
// naming the host when it cannot be resolved.
sockaddr_in resolve_ipv4(const std::string& host, int port);

// "ip:port".
std::string address_text(const sockaddr_in& addr);
// The "ip:port" a bound socket listens on or connects from (getsockname).
std::string local_address(int fd);

// This machine's host name (gethostname).
std::string local_host_name();

// The first IPv4 address of the network interface `name` (e.g. "eth0"); throws cohort::Error
// when there is no such interface or it has no IPv4 address.
std::string interface_ipv4(const std::string& name);

// This machine's IPv4 address on the route towards `host`: the source address the kernel picks
// for a UDP socket connected there (nothing is sent). Throws cohort::Error naming the host.
std::string local_ipv4_towards(const std::string& host);

}  // namespace cohort::net
