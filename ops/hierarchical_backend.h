// Collectives for worlds over several hosts with several ranks on some, which move the cross-host
// bytes once per host instead of once per rank:
// - allreduce: reduce within each host through shared memory, allreduce across hosts among one
//   rank per host (the host's lowest) over the world's Gloo, broadcast within each host;
// - broadcast: within the root's host, across hosts, then within every other host;
// - allgather of results up to 256 KiB: gather within each host, trade the hosts' blocks across
//   hosts, hand them out within each host (larger ones stay flat, where Gloo's ring is faster);
// - reducescatter of inputs up to 2 MiB: reduce within each host, reduce-scatter the hosts' parts
//   across hosts, then hand each rank its block within its host (larger ones stay flat).
// A host's ranks need not be consecutive. Alltoall (whose every byte has its own destination, so
// nothing to combine), barrier and process sets stay on the flat Gloo world, which this backend
// wraps.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "ops/shm_backend.h"

namespace cohort::ops {

struct HierarchicalOptions {
  // `hosts[r]` names rank r's host; the same list on every rank.
  std::vector<std::string> hosts;
  // For each host's segment, as for a world on one host.
  ShmBackendOptions shm;
};

// Collective over `world`'s ranks. Takes `world` once every host's segment and the cross-host
// group are set up; throws InternalError if they cannot be, leaving `world` with the caller.
std::unique_ptr<Backend> make_hierarchical_backend(std::unique_ptr<Backend>& world,
                                                   const HierarchicalOptions& options);

}  // namespace cohort::ops
