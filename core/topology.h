// Where each rank sits: its rank among the processes on the same host (local) and among the
// processes with the same local rank on other hosts (cross), computed from every rank's host name.
#pragma once

#include <string>
#include <vector>

namespace cohort {

struct Topology {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;

  // `hosts[r]` names rank r's host.
  static Topology from_hosts(int rank, const std::vector<std::string>& hosts);
};

}  // namespace cohort
