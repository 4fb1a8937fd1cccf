// The sharded values' layout and reshard plans, as pure functions: ranges, replica placement over
// hosts, and the transfers (and gaps) when the world shrinks, grows or loses a range.
#include <catch2/catch.hpp>

#include "cohort/errors.h"
#include "state/shard_layout.h"
#include "state/shard_plan.h"

using cohort::elastic::shard_range;
using cohort::elastic::ShardRange;
using namespace cohort::elastic::detail;

namespace {

// Every rank's range in a world of `size`, as held copies (rank r holds range r).
std::vector<HeldRange> owners(uint64_t length, int size) {
  std::vector<HeldRange> held;
  for (int r = 0; r < size; ++r) held.push_back({r, shard_range(length, r, size)});
  return held;
}

// The transfers that leave their rank.
uint64_t moved(const ReshardPlan& plan) {
  uint64_t n = 0;
  for (const Transfer& t : plan.transfers) n += t.from == t.to ? 0 : t.range.size();
  return n;
}

// Every rank's range is filled exactly, in order, by the plan.
void check_fills(const ReshardPlan& plan, uint64_t length, int size) {
  for (int to = 0; to < size; ++to) {
    ShardRange want = shard_range(length, to, size);
    uint64_t at = want.begin;
    for (const Transfer& t : plan.transfers) {
      if (t.to != to) continue;
      REQUIRE(t.range.begin == at);
      at = t.range.end;
    }
    REQUIRE(at == want.end);
  }
}

}  // namespace

TEST_CASE("shard ranges cover the buffer in rank order, the first ranks one longer") {
  CHECK(shard_range(10, 0, 3) == ShardRange{0, 4});
  CHECK(shard_range(10, 1, 3) == ShardRange{4, 7});
  CHECK(shard_range(10, 2, 3) == ShardRange{7, 10});
  CHECK(shard_range(4, 3, 4) == ShardRange{3, 4});
  CHECK(shard_range(7, 0, 1) == ShardRange{0, 7});
  CHECK_THROWS_AS(shard_range(10, 3, 3), cohort::InvalidArgument);
  CHECK_THROWS_AS(shard_range(10, 0, 0), cohort::InvalidArgument);
}

TEST_CASE("replicas go to the same local index on the next host") {
  std::vector<std::string> hosts{"a", "a", "b", "b"};
  CHECK(replica_holders(0, hosts, 1) == std::vector<int>{2});
  CHECK(replica_holders(1, hosts, 1) == std::vector<int>{3});
  CHECK(replica_holders(2, hosts, 1) == std::vector<int>{0});
  CHECK(replica_holders(3, hosts, 1) == std::vector<int>{1});
  CHECK(replicas_kept_by(0, hosts, 1) == std::vector<int>{2});
  // More replicas than other hosts: the other host's other rank before this host's.
  CHECK(replica_holders(0, hosts, 2) == std::vector<int>{2, 3});
  CHECK(replica_holders(0, hosts, 3) == std::vector<int>{2, 3, 1});
  CHECK(replica_holders(0, hosts, 0).empty());
}

TEST_CASE("on one host, replicas go to the next ranks") {
  std::vector<std::string> hosts{"a", "a", "a"};
  CHECK(replica_holders(0, hosts, 1) == std::vector<int>{1});
  CHECK(replica_holders(2, hosts, 1) == std::vector<int>{0});
  CHECK(replica_holders(1, hosts, 2) == std::vector<int>{2, 0});
}

TEST_CASE("hosts interleaved and uneven keep replicas off the owner's host") {
  std::vector<std::string> hosts{"a", "b", "a", "b", "a"};
  for (int r = 0; r < 5; ++r) {
    for (int h : replica_holders(r, hosts, 1)) CHECK(hosts[h] != hosts[r]);
  }
  CHECK(replica_holders(4, hosts, 1) == std::vector<int>{1});  // local 2 on b (2 ranks) -> b[0]
}

TEST_CASE("replicas must be fewer than the ranks") {
  std::vector<std::string> hosts{"a", "b"};
  CHECK_THROWS_WITH(replica_holders(0, hosts, 2), Catch::Contains("COHORT_STATE_REPLICAS=2") &&
                                                      Catch::Contains("world size (2)"));
  CHECK_THROWS_AS(replica_holders(0, hosts, -1), cohort::InvalidArgument);
}

TEST_CASE("the same world moves nothing") {
  ReshardPlan plan = plan_reshard(1000, 4, owners(1000, 4));
  CHECK(plan.missing.empty());
  CHECK(moved(plan) == 0);
  check_fills(plan, 1000, 4);
}

TEST_CASE("shrinking 4 to 3 moves only the elements whose holder changed") {
  // Ranks 0, 1, 2 survive, each with its old range; rank 3's range survives as a replica on
  // (new) rank 1.
  std::vector<HeldRange> held = owners(1200, 4);
  held.pop_back();
  held.push_back({1, shard_range(1200, 3, 4)});
  ReshardPlan plan = plan_reshard(1200, 3, held);
  CHECK(plan.missing.empty());
  check_fills(plan, 1200, 3);
  // Old ranges 0-300, 300-600, 600-900, 900-1200; new 0-400, 400-800, 800-1200. Rank 0 gets
  // 300-400 from rank 1, rank 1 600-800 from rank 2, rank 2 900-1200 from rank 1's replica.
  CHECK(moved(plan) == 100 + 200 + 300);
  for (const Transfer& t : plan.transfers) {
    if (t.to == 2 && t.range.begin >= 900) CHECK(t.from == 1);
  }
}

TEST_CASE("growing 2 to 4 gives the new ranks their ranges from the old holders") {
  ReshardPlan plan = plan_reshard(100, 4, owners(100, 2));
  CHECK(plan.missing.empty());
  check_fills(plan, 100, 4);
  CHECK(plan.transfers ==
        std::vector<Transfer>{
            {0, 0, {0, 25}}, {0, 1, {25, 50}}, {1, 2, {50, 75}}, {1, 3, {75, 100}}});
}

TEST_CASE("a range nobody holds is reported, merged across rank boundaries") {
  std::vector<HeldRange> held{{0, {0, 30}}, {1, {60, 100}}};
  ReshardPlan plan = plan_reshard(100, 4, held);
  REQUIRE(plan.missing.size() == 1);
  CHECK(plan.missing[0] == ShardRange{30, 60});
}

TEST_CASE("a rank takes its own copy first, then the furthest-reaching one") {
  // Rank 1 holds 40-50 itself; the rest of its range 25-50 comes from rank 0's wider copy.
  std::vector<HeldRange> held{{0, {0, 45}}, {1, {40, 50}}, {2, {50, 100}}, {2, {0, 10}}};
  ReshardPlan plan = plan_reshard(100, 4, held);
  CHECK(plan.missing.empty());
  check_fills(plan, 100, 4);
  std::vector<Transfer> to1;
  for (const Transfer& t : plan.transfers) {
    if (t.to == 1) to1.push_back(t);
  }
  CHECK(to1 == std::vector<Transfer>{{0, 1, {25, 40}}, {1, 1, {40, 50}}});
}
