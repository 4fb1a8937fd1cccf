// What an agent reads of its job (agent/agent_view.h): every kind of key under the job's
// prefix, and records that do not parse left out.
#include "agent/agent_view.h"

#include <catch2/catch.hpp>

#include "test/common/captured_stderr.h"

using namespace cohort::discovery;

TEST_CASE("agent view: records, check-ins, notices, exits and kills in one snapshot") {
  std::map<std::string, std::string> values = {
      {"agents/a", "slots=2 workers=a.0.0,a.1.0"},
      {"agents/b", "slots=1 workers=b.0.0"},
      {"planners/0", "b"},
      {"planners/1", "a"},
      {"rounds/0", "generation=0\na.0.0 a 0\nb.0.0 b 0\n"},
      {"rounds/1", "generation=2\na.0.0 a 1\na.1.0 a 0\nb.0.0 b 1\n"},
      {"exits/a.9.0", "0"},
      {"exits/b.7.0", "was killed by signal 9 (SIGKILL)"},
      {"kills/b.7.0", "it did not check in"},
      {"elastic/checkin/a.0.0/0", "start"},
      {"elastic/checkin/a.0.0/1", "failed"},
      {"elastic/notice/1", "x"},
      {"elastic/notice/3", "y"},
      {"elastic/assign/a.0.0/0", "round=0 ..."},  // not the agents' business
      {"round/1/rank_0", "address"},
  };
  AgentSnapshot s = parse_agent_snapshot(values);
  CHECK(s.view.nodes.size() == 2);
  CHECK(s.view.nodes.at("a").workers == std::vector<std::string>{"a.0.0", "a.1.0"});
  CHECK(s.planners == std::map<int, std::string>{{0, "b"}, {1, "a"}});
  REQUIRE(s.view.last_round);
  CHECK(s.view.last_round_number == 1);
  CHECK(s.view.last_round->generation == 2);
  CHECK(s.view.last_round->members.size() == 3);
  CHECK(s.view.finished == std::set<std::string>{"a.9.0"});
  CHECK(s.exits.size() == 2);
  CHECK(s.kills.at("b.7.0") == "it did not check in");
  CHECK(s.view.checkins.at("a.0.0") == std::set<int>{0, 1});
  CHECK(s.generation == 3);
}

TEST_CASE("agent view: the workers' progress and reset reports") {
  cohort::testing::CapturedStderr err;
  std::map<std::string, std::string> values = {
      {"elastic/progress", "commits=4 samples=96"}, {"elastic/reset/a.0.0/1", "round=1 ..."},
      {"elastic/reset/a.0.0/2", "round=2 ..."},     {"elastic/reset/b.0.0/1", "round=1 ..."},
      {"elastic/reset/b.0.0/x", "round=1 ..."},     {"elastic/reset//1", "round=1 ..."},
  };
  AgentSnapshot s = parse_agent_snapshot(values);
  REQUIRE(s.progress);
  CHECK(*s.progress == "commits=4 samples=96");
  CHECK(s.resets.size() == 2);
  CHECK(s.resets.at("a.0.0") == std::map<int, std::string>{{1, "round=1 ..."}, {2, "round=2 ..."}});
  CHECK(s.resets.at("b.0.0").size() == 1);
  CHECK(err.text().find("not reset/<worker>/<entry>") != std::string::npos);
}

TEST_CASE("agent view: rounds compare as numbers, not as key text") {
  std::map<std::string, std::string> values = {{"rounds/9", "generation=0\nx.0.0 x 9\n"},
                                               {"rounds/10", "generation=0\nx.0.0 x 10\n"}};
  AgentSnapshot s = parse_agent_snapshot(values);
  CHECK(s.view.last_round_number == 10);
  CHECK(s.view.last_round->members[0].entry == 10);
}

TEST_CASE("agent view: a record that does not parse is logged and left out") {
  cohort::testing::CapturedStderr err;
  std::map<std::string, std::string> values = {{"agents/a", "slots=1 workers=a.0.0"},
                                               {"agents/bad", "slots=0 workers="},
                                               {"rounds/0", "generation=0\na.0.0 a 0\n"},
                                               {"rounds/1", "generation=zero\n"},
                                               {"elastic/checkin/a.0.0/x", "start"}};
  AgentSnapshot s = parse_agent_snapshot(values);
  CHECK(s.view.nodes.size() == 1);
  CHECK(s.view.last_round_number == 0);
  CHECK(s.view.checkins.empty());
  std::string text = err.text();
  CHECK(text.find("agents/bad") != std::string::npos);
  CHECK(text.find("rounds/1") != std::string::npos);
  CHECK(text.find("checkin/a.0.0/x") != std::string::npos);
}

TEST_CASE("agent view: the keys a snapshot reads are those whose changes wake an agent") {
  for (const char* key : {"job", "agents/a", "planners/1", "rounds/1", "exits/a.0.0", "kills/a.0.0",
                          "elastic/checkin/a.0.0/0", "elastic/reset/a.0.0/1", "elastic/progress",
                          "elastic/notice/2"}) {
    CAPTURE(key);
    CHECK(in_agent_snapshot(key));
  }
  // Left out of every snapshot: their changes are applied to the mirror and acted on by nobody.
  for (const char* key : {"names/a", "elastic/assign/a.0.0/0", "round/1/rank_0", "agents/",
                          "agentsx", "elastic/abandon/1"}) {
    CAPTURE(key);
    CHECK_FALSE(in_agent_snapshot(key));
    auto s = parse_agent_snapshot({{key, "slots=1 workers="}});
    CHECK(s.view.nodes.empty());
    CHECK(s.planners.empty());
    CHECK(s.view.checkins.empty());
  }
}
