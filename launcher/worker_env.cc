#include "launcher/worker_env.h"

#include <arpa/inet.h>

#include "base/launch_env.h"
#include "base/net.h"
#include "cohort/errors.h"
#include "rendezvous/hmac.h"

namespace cohort::discovery {
namespace {

std::string var(const char* name, const std::string& value) {
  return name + ("=" + value);
}
std::string var(const char* name, int value) {
  return var(name, std::to_string(value));
}

}  // namespace

RendezvousEndpoint endpoint_towards(const RendezvousEndpoint& server, const std::string& host,
                                    const std::string& network_interface) {
  RendezvousEndpoint out = server;
  if (is_local_host(host)) {
    out.addr = "127.0.0.1";
    return out;
  }
  if (!network_interface.empty()) {
    try {
      out.addr = net::interface_ipv4(network_interface);
      return out;
    } catch (const Error&) {
      // Not an interface of this machine (only of the workers' hosts): follow the route.
    }
  }
  out.addr = net::local_ipv4_towards(host);
  return out;
}

std::string rendezvous_bind_address(bool any_remote_host) {
  return any_remote_host ? "0.0.0.0" : "127.0.0.1";
}

std::string worker_listen_address(const std::string& host) {
  // Remote hosts listen on the name they were given (or on --network-interface's address, which
  // the worker looks up itself); local ones stay on loopback.
  if (!is_local_host(host)) return host;
  in_addr addr{};
  return inet_pton(AF_INET, host.c_str(), &addr) == 1 ? host : "127.0.0.1";
}

std::vector<std::string> elastic_worker_environment(const std::string& worker_id,
                                                    const std::string& host,
                                                    const RendezvousEndpoint& endpoint) {
  return {var(env::kWorkerId, worker_id), var(env::kHostname, worker_listen_address(host)),
          var(env::kRendezvousAddr, endpoint.addr), var(env::kRendezvousPort, endpoint.port),
          var(env::kSecret, rendezvous::to_hex(endpoint.secret))};
}

std::vector<std::string> agent_worker_environment(const std::string& worker_id,
                                                  const std::string& address,
                                                  const std::string& secret,
                                                  const std::string& prefix,
                                                  const rendezvous::EtcdOptions& etcd) {
  std::string endpoints;
  for (const auto& e : etcd.endpoints) endpoints += (endpoints.empty() ? "" : ",") + e;
  std::vector<std::string> env = {var(env::kWorkerId, worker_id), var(env::kHostname, address),
                                  var(env::kSecret, rendezvous::to_hex(secret)),
                                  var(env::kEtcdPrefix, prefix),
                                  var(env::kEtcdEndpoints, endpoints)};
  const std::pair<const char*, std::string> tls[] = {{env::kEtcdCaFile, etcd.ca_file},
                                                     {env::kEtcdCertFile, etcd.cert_file},
                                                     {env::kEtcdKeyFile, etcd.key_file}};
  for (const auto& [name, file] : tls) {
    if (!file.empty()) env.push_back(var(name, file));
  }
  return env;
}

std::vector<std::string> worker_environment(const SlotAssignment& slot,
                                            const RendezvousEndpoint& endpoint) {
  const Placement& p = slot.placement;
  return {var(env::kRank, p.rank),
          var(env::kSize, p.size),
          var(env::kLocalRank, p.local_rank),
          var(env::kLocalSize, p.local_size),
          var(env::kCrossRank, p.cross_rank),
          var(env::kCrossSize, p.cross_size),
          var(env::kHorovodRank, p.rank),
          var(env::kHorovodSize, p.size),
          var(env::kHorovodLocalRank, p.local_rank),
          var(env::kHorovodLocalSize, p.local_size),
          var(env::kHorovodCrossRank, p.cross_rank),
          var(env::kHorovodCrossSize, p.cross_size),
          var(env::kHostname, worker_listen_address(slot.host)),
          var(env::kRendezvousAddr, endpoint.addr),
          var(env::kRendezvousPort, endpoint.port),
          var(env::kSecret, rendezvous::to_hex(endpoint.secret))};
}

}  // namespace cohort::discovery
