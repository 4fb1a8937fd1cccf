#include "core/topology.h"

namespace cohort {

Topology Topology::from_hosts(int rank, const std::vector<std::string>& hosts) {
  Topology t;
  t.rank = rank;
  t.size = static_cast<int>(hosts.size());
  t.local_rank = 0;
  t.local_size = 0;
  std::vector<int> local_rank_of(hosts.size());
  for (size_t r = 0; r < hosts.size(); ++r) {
    int same_host_before = 0;
    for (size_t q = 0; q < r; ++q) same_host_before += hosts[q] == hosts[r];
    local_rank_of[r] = same_host_before;
    if (hosts[r] == hosts[rank]) ++t.local_size;
  }
  t.local_rank = local_rank_of[rank];
  t.cross_rank = 0;
  t.cross_size = 0;
  for (size_t r = 0; r < hosts.size(); ++r) {
    if (local_rank_of[r] != t.local_rank) continue;
    if (static_cast<int>(r) < rank) ++t.cross_rank;
    ++t.cross_size;
  }
  return t;
}

}  // namespace cohort
