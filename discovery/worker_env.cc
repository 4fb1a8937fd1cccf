#include "discovery/worker_env.h"

#include <arpa/inet.h>

#include "core/launch_env.h"
#include "discovery/hmac.h"

namespace cohort::discovery {
namespace {

std::string var(const char* name, const std::string& value) {
  return name + ("=" + value);
}
std::string var(const char* name, int value) {
  return var(name, std::to_string(value));
}

}  // namespace

std::string worker_listen_address(const std::string& host) {
  // Remote hosts (ssh, later) will listen on their own name; local ones stay on loopback.
  if (!is_local_host(host)) return host;
  in_addr addr{};
  return inet_pton(AF_INET, host.c_str(), &addr) == 1 ? host : "127.0.0.1";
}

std::vector<std::string> elastic_worker_environment(const std::string& worker_id,
                                                    const std::string& host,
                                                    const RendezvousEndpoint& rendezvous) {
  return {var(env::kWorkerId, worker_id), var(env::kHostname, worker_listen_address(host)),
          var(env::kRendezvousAddr, rendezvous.addr), var(env::kRendezvousPort, rendezvous.port),
          var(env::kSecret, to_hex(rendezvous.secret))};
}

std::vector<std::string> worker_environment(const SlotAssignment& slot,
                                            const RendezvousEndpoint& rendezvous) {
  return {var(env::kRank, slot.rank),
          var(env::kSize, slot.size),
          var(env::kLocalRank, slot.local_rank),
          var(env::kLocalSize, slot.local_size),
          var(env::kCrossRank, slot.cross_rank),
          var(env::kCrossSize, slot.cross_size),
          var(env::kHostname, worker_listen_address(slot.host)),
          var(env::kRendezvousAddr, rendezvous.addr),
          var(env::kRendezvousPort, rendezvous.port),
          var(env::kSecret, to_hex(rendezvous.secret))};
}

}  // namespace cohort::discovery
