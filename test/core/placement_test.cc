#include <catch2/catch.hpp>

#include "base/placement.h"

using cohort::Placement;

TEST_CASE("local and cross ranks follow host placement") {
  std::vector<std::string> hosts = {"a", "a", "b", "b", "b"};
  Placement t = Placement::from_hosts(3, hosts);
  CHECK(t.local_rank == 1);
  CHECK(t.local_size == 3);
  CHECK(t.cross_rank == 1);  // rank 1 on host a also has local rank 1
  CHECK(t.cross_size == 2);
  Placement last = Placement::from_hosts(4, hosts);
  CHECK(last.local_rank == 2);
  CHECK(last.cross_rank == 0);
  CHECK(last.cross_size == 1);
  CHECK(t == Placement{.rank = 3,
                       .size = 5,
                       .local_rank = 1,
                       .local_size = 3,
                       .cross_rank = 1,
                       .cross_size = 2});
  CHECK(last != t);
}
