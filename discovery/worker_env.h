// The environment a worker receives from cohortrun (names from core/launch_env.h), built in one
// place so static and elastic launches hand workers the same contract.
#pragma once

#include <string>
#include <vector>

#include "discovery/hosts.h"

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

// The address a worker on `host` listens on: 127.0.0.1 for this machine.
std::string worker_listen_address(const std::string& host);

}  // namespace cohort::discovery
