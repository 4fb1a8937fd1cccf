#include "base/placement.h"

namespace cohort {

Placement Placement::from_hosts(int rank, const std::vector<std::string>& hosts) {
  Placement p;
  p.rank = rank;
  p.size = static_cast<int>(hosts.size());
  p.local_rank = 0;
  p.local_size = 0;
  std::vector<int> local_rank_of(hosts.size());
  for (size_t r = 0; r < hosts.size(); ++r) {
    int same_host_before = 0;
    for (size_t q = 0; q < r; ++q) same_host_before += hosts[q] == hosts[r];
    local_rank_of[r] = same_host_before;
    if (hosts[r] == hosts[rank]) ++p.local_size;
  }
  p.local_rank = local_rank_of[rank];
  p.cross_rank = 0;
  p.cross_size = 0;
  for (size_t r = 0; r < hosts.size(); ++r) {
    if (local_rank_of[r] != p.local_rank) continue;
    if (static_cast<int>(r) < rank) ++p.cross_rank;
    ++p.cross_size;
  }
  return p;
}

}  // namespace cohort
