#include <catch2/catch.hpp>

#include "core/topology.h"

using cohort::Topology;

TEST_CASE("local and cross ranks follow host placement") {
  std::vector<std::string> hosts = {"a", "a", "b", "b", "b"};
  Topology t = Topology::from_hosts(3, hosts);
  CHECK(t.local_rank == 1);
  CHECK(t.local_size == 3);
  CHECK(t.cross_rank == 1);  // rank 1 on host a also has local rank 1
  CHECK(t.cross_size == 2);
  Topology last = Topology::from_hosts(4, hosts);
  CHECK(last.local_rank == 2);
  CHECK(last.cross_rank == 0);
  CHECK(last.cross_size == 1);
}
