// The environment a worker receives from cohortrun (names from base/launch_env.h), built in one
// place so static and elastic launches hand workers the same contract.
#pragma once

#include <string>
#include <vector>

#include "launcher/hosts.h"
#include "rendezvous/etcd_client.h"

namespace cohort::discovery {

struct RendezvousEndpoint {
  std::string addr;
  int port = 0;
  std::string secret;  // raw bytes; exported as hex
};

// "NAME=value" entries: rank, size, local and cross placement, the worker's listen address, the
// rendezvous address and port, and the job secret. Only ever passed as an environment.
std::vector<std::string> worker_environment(const SlotAssignment& slot,
                                            const RendezvousEndpoint& rendezvous);

// An elastic worker's environment: its id, its listen address, the rendezvous and the secret,
// and no rank or size (each round's assignment carries them; see elastic_protocol.h).
std::vector<std::string> elastic_worker_environment(const std::string& worker_id,
                                                    const std::string& host,
                                                    const RendezvousEndpoint& rendezvous);

// An agent's worker's environment (agent/agent_job.h): its id, its listen address, the job
// secret (raw bytes; exported as hex), and the job's store on etcd: `prefix` and `etcd`'s
// endpoints and TLS files.
std::vector<std::string> agent_worker_environment(const std::string& worker_id,
                                                  const std::string& address,
                                                  const std::string& secret,
                                                  const std::string& prefix,
                                                  const rendezvous::EtcdOptions& etcd);

// The rendezvous server's address as a worker on `host` reaches it: loopback for this machine,
// otherwise this machine's address on the route to `host`, or that of `network_interface` when
// this machine has such an interface. Throws cohort::Error when `host` cannot be resolved.
RendezvousEndpoint endpoint_towards(const RendezvousEndpoint& server, const std::string& host,
                                    const std::string& network_interface);

// Where the rendezvous server listens: loopback when every host is this machine, so nothing
// else can even connect; every interface when a host is remote (requests are HMAC-signed).
std::string rendezvous_bind_address(bool any_remote_host);

// The address a worker on `host` listens on: a 127.x.y.z host is its own address (so tests can
// give local "hosts" distinct addresses), any other name of this machine is 127.0.0.1.
std::string worker_listen_address(const std::string& host);

}  // namespace cohort::discovery
