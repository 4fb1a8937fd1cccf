// The shapes of agent mode's records (agent/agent_records.h): what agents write survives
// reading back, and text of any other shape is refused, saying why.
#include "agent/agent_records.h"

#include <catch2/catch.hpp>

#include "cohort/errors.h"

using namespace cohort;
using namespace cohort::discovery;
using Catch::Matchers::Contains;

TEST_CASE("agent records: a node record survives formatting, with or without workers") {
  for (const AgentNode& node : {AgentNode{2, {"n1.0.0", "n1.1.3"}}, AgentNode{4, {}}}) {
    CHECK(parse_agent_node(format_agent_node(node)) == node);
  }
  CHECK(format_agent_node({2, {"a.0.0", "a.1.0"}}) == "slots=2 workers=a.0.0,a.1.0");
}

TEST_CASE("agent records: bad node records are refused with the reason") {
  CHECK_THROWS_WITH(parse_agent_node(""), Contains("expected 'slots=N workers=...'"));
  CHECK_THROWS_WITH(parse_agent_node("slots=x workers="), Contains("'x' is not a whole number"));
  CHECK_THROWS_WITH(parse_agent_node("slots=0 workers="), Contains("at least one slot"));
  CHECK_THROWS_WITH(parse_agent_node("slots=1 workers=a,b"), Contains("more workers than slots"));
  CHECK_THROWS_WITH(parse_agent_node("slots=2 workers=a,,b"), Contains("an empty worker id"));
  CHECK_THROWS_WITH(parse_agent_node("workers=a slots=2"), Contains("expected slots=..."));
}

TEST_CASE("agent records: a round record survives formatting, and so does a stop") {
  AgentRound round{3, {{"a.0.0", "a", 2}, {"b.0.1", "b", 0}}, std::nullopt};
  CHECK(parse_agent_round(format_agent_round(round)) == round);
  AgentRound stop{0, {}, "the reset limit of 3 was exceeded"};
  CHECK(parse_agent_round(format_agent_round(stop)) == stop);
}

TEST_CASE("agent records: bad round records are refused with the reason") {
  CHECK_THROWS_WITH(parse_agent_round(""), Contains("empty"));
  CHECK_THROWS_WITH(parse_agent_round("generation=1\n"), Contains("no member"));
  CHECK_THROWS_WITH(parse_agent_round("generation=1\na a\n"), Contains("is not '<worker>"));
  CHECK_THROWS_WITH(parse_agent_round("generation=1\na a 0\na b 1\n"), Contains("listed twice"));
  CHECK_THROWS_WITH(parse_agent_round("generation=1\na a -1\n"), Contains("not a whole number"));
  CHECK_THROWS_WITH(parse_agent_round("gen=1\na a 0\n"), Contains("expected generation=..."));
}

TEST_CASE("agent records: worker ids are short words whatever the node is called") {
  CHECK(agent_worker_id("10.0.0.7", 1, 0) == "10.0.0.7.1.0");
  CHECK(agent_worker_id("pod/trainer-3 x", 0, 2) == "pod_trainer-3_x.0.2");
  CHECK(agent_key("n1") == "agents/n1");
  CHECK(round_key(4) == "rounds/4");
  CHECK(planner_key(4) == "planners/4");
}
