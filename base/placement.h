// Where a process sits in a job: its rank among all ranks, among the ranks on its host (local)
// and among the ranks with the same local rank on other hosts (cross). The launcher plans it,
// the elastic protocol carries it to the workers, and the runtime reads it from the launcher's
// environment or computes it from every rank's host name.
#pragma once

#include <string>
#include <vector>

namespace cohort {

struct Placement {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;

  // The placement of `rank` when `hosts[r]` names rank r's host: local ranks count a host's
  // ranks in rank order, cross ranks count the ranks that share a local rank in rank order.
  static Placement from_hosts(int rank, const std::vector<std::string>& hosts);

  bool operator==(const Placement&) const = default;
};

}  // namespace cohort
