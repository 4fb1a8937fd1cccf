#include <catch2/catch.hpp>

#include "cohort/errors.h"
#include "launcher/host_manager.h"
#include "launcher/hosts.h"

using namespace cohort::discovery;
using Catch::Matchers::Contains;

TEST_CASE("host lists parse with default and explicit slots") {
  CHECK(parse_host_list("a:2,b,c:3") == std::vector<HostSlots>{{"a", 2}, {"b", 1}, {"c", 3}});
  CHECK_THROWS_WITH(parse_host_list("a:0"), Contains("slot count '0'"));
  CHECK_THROWS_WITH(parse_host_list("a:x"), Contains("slot count 'x'"));
  CHECK_THROWS_WITH(parse_host_list("a,,b"), Contains("is not a valid host name"));
  CHECK_THROWS_WITH(parse_host_list("bad host:2"), Contains("'bad host'"));
  // A name that ssh could take for an option is never a host.
  CHECK_THROWS_WITH(parse_host_list("-oProxyCommand:1"), Contains("is not a valid host name"));
  CHECK_THROWS_WITH(parse_host_list(".hidden"), Contains("is not a valid host name"));
}

TEST_CASE("hostfiles parse and errors name the line") {
  auto hosts = parse_hostfile_text("# cluster\nnode1 slots=4\n\nnode2  # one slot\n", "hf");
  CHECK(hosts == std::vector<HostSlots>{{"node1", 4}, {"node2", 1}});
  CHECK_THROWS_WITH(parse_hostfile_text("n1 slots=2\nn2 cpus=3\n", "hf"), Contains("hf:2"));
  CHECK_THROWS_WITH(parse_hostfile_text("n1 slots=2 extra\n", "hf"), Contains("hf:1"));
  CHECK_THROWS_WITH(parse_hostfile_text("# nothing\n", "hf"), Contains("names no hosts"));
  CHECK_THROWS_AS(read_hostfile("/nonexistent/hostfile"), cohort::InvalidArgument);
}

TEST_CASE("slots are filled host by host with local and cross ranks") {
  auto slots = assign_slots({{"a", 2}, {"b", 2}}, 3);
  REQUIRE(slots.size() == 3);
  CHECK(slots[0].host == "a");
  CHECK(slots[1].placement.local_rank == 1);
  CHECK(slots[1].placement.local_size == 2);
  CHECK(slots[2].host == "b");
  CHECK(slots[2].placement.local_rank == 0);
  CHECK(slots[2].placement.local_size == 1);
  CHECK(slots[2].placement.cross_rank == 1);
  CHECK(slots[0].placement.cross_size == 2);
  CHECK(slots[1].placement.cross_size == 1);
  CHECK_THROWS_WITH(assign_slots({{"a", 2}}, 3), Contains("only 2"));
  CHECK_THROWS_WITH(assign_slots({{"a", 2}}, 0), Contains("at least 1"));
}

TEST_CASE("local hosts are recognised") {
  CHECK(is_local_host("localhost"));
  CHECK(is_local_host("127.0.0.1"));
  CHECK(is_local_host("127.0.0.2"));
  CHECK_FALSE(is_local_host("10.9.8.7"));
  CHECK_FALSE(is_local_host("127.example.com"));
}

TEST_CASE("the host manager refuses empty and duplicate host lists") {
  CHECK(HostManager({{"a", 2}, {"b", 3}}).total_slots() == 5);
  CHECK(HostManager({{"a", 2}, {"b", 3}}).assign(4).back().host == "b");
  CHECK_THROWS_WITH(HostManager({}), Contains("no hosts"));
  CHECK_THROWS_WITH(HostManager({{"a", 1}, {"a", 2}}), Contains("'a' is listed twice"));
}
