// Small socket helpers shared by the runtime's control channel and the launcher's rendezvous.
#pragma once

#include <netinet/in.h>

#include <string>

namespace cohort::net {

// The IPv4 address of `host` (a name or a dotted address) with `port`; throws cohort::Error
// naming the host when it cannot be resolved.
sockaddr_in resolve_ipv4(const std::string& host, int port);

// This machine's host name (gethostname).
std::string local_host_name();

}  // namespace cohort::net
