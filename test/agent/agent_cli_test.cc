// cohortrun's agent-mode settings that CLI11 cannot check (agent/agent_cli.h).
#include "agent/agent_cli.h"

#include <catch2/catch.hpp>

#include "cohort/errors.h"

using namespace cohort::discovery;
using cohort::InvalidArgument;

TEST_CASE("agent cli: --nnodes takes N or MIN:MAX and nothing else") {
  CHECK(parse_nnodes("3") == std::pair(3, 3));
  CHECK(parse_nnodes("2:4") == std::pair(2, 4));
  for (const char* bad : {"", "0", "2:", ":4", "4:2", "a", "2:4:6", "-1", "1.5"}) {
    CHECK_THROWS_AS(parse_nnodes(bad), InvalidArgument);
  }
}

TEST_CASE("agent cli: the secret is 64 hex digits from COHORT_SECRET") {
  std::string hex(64, 'a');
  CHECK(agent_secret(hex.c_str()) == std::string(32, '\xaa'));
  CHECK_THROWS_WITH(agent_secret(nullptr), Catch::Contains("COHORT_SECRET"));
  CHECK_THROWS_AS(agent_secret("abcd"), InvalidArgument);
  CHECK_THROWS_AS(agent_secret(std::string(64, 'g').c_str()), InvalidArgument);
}

TEST_CASE("agent cli: COHORT_FAULT_AGENT_KILL_AT is ROUND:MARKER_FILE") {
  auto fault = parse_agent_fault("1:/tmp/marker");
  CHECK(fault.round == 1);
  CHECK(fault.marker == "/tmp/marker");
  for (const char* bad : {"", "1", "1:", "x:/tmp/m", "-1:/tmp/m"}) {
    CHECK_THROWS_WITH(parse_agent_fault(bad), Catch::Contains("COHORT_FAULT_AGENT_KILL_AT"));
  }
}

TEST_CASE("agent cli: the default node address is the one towards etcd") {
  CHECK(default_node_address("http://127.0.0.1:2379") == "127.0.0.1");
  CHECK(default_node_address("https://127.0.0.1/") == "127.0.0.1");
}
