// Where a sharded value's bytes live: each rank's range (shard_range, public) and which ranks
// keep a replica of it. Pure functions of the length, the world and its hosts, so every rank
// computes the same answer without asking.
#pragma once

#include <string>
#include <vector>

#include "cohort/elastic/sharded.h"

namespace cohort::elastic::detail {

// The ranks that keep a copy of `rank`'s range, `replicas` of them: with the hosts in a ring (in
// the order they first appear), the rank of the same local index on each next host, then the
// other hosts' other ranks, and only then the next ranks of its own host. So with one rank per GPU
// and equal hosts, every rank keeps as many replicas as it sends. `hosts[r]` names rank r's host.
// InvalidArgument unless 0 <= replicas < hosts.size().
std::vector<int> replica_holders(int rank, const std::vector<std::string>& hosts, int replicas);

// The ranks whose range `rank` keeps a copy of (the inverse of replica_holders), in rank order.
std::vector<int> replicas_kept_by(int rank, const std::vector<std::string>& hosts, int replicas);

}  // namespace cohort::elastic::detail
