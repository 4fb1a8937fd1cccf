// Why agent mode's next round was needed (agent/agent_cause.h), as a table: what a snapshot says
// of the last round's members, and the cause every agent records for the round after it.
#include "agent/agent_cause.h"

#include <catch2/catch.hpp>

using namespace cohort::discovery;

namespace {

// Round 3 of a.0.0 (entry 3) and b.0.0 (entry 2), both nodes live and listing them, and what
// `extra` adds to that snapshot.
AgentSnapshot snapshot(const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> values = {
      {"agents/a", "slots=1 workers=a.0.0"},
      {"agents/b", "slots=1 workers=b.0.0"},
      {"rounds/3", "generation=1\na.0.0 a 3\nb.0.0 b 2\n"},
      {"elastic/checkin/a.0.0/3", "interrupted"},
      {"elastic/checkin/b.0.0/2", "interrupted"},
  };
  for (const auto& [key, value] : extra) values[key] = value;
  return parse_agent_snapshot(values);
}

}  // namespace

TEST_CASE("agent cause: what the members did names the next round") {
  struct Row {
    std::map<std::string, std::string> extra;
    const char* cause;  // "": none
  };
  // clang-format off
  std::vector<Row> table = {
      {{}, ""},                                                          // all train on
      {{{"elastic/checkin/a.0.0/4", "failed x"}}, "worker_left"},         // a collective failed
      {{{"exits/b.0.0", "was killed by signal 9 (SIGKILL)"}}, "failure"},
      {{{"agents/b", "slots=1 workers="}}, "failure"},                   // its node lost it
      {{{"elastic/checkin/b.0.0/3", "drained"}}, "drain"},
      {{{"exits/b.0.0", "0"}}, "worker_finished"},
      {{{"exits/b.0.0", "left"}}, "worker_left"},
      {{{"agents/c", "slots=1 workers=c.0.0"}, {"elastic/checkin/c.0.0/0", "start"}},
       "hosts_changed"},
      // The weightier cause wins whatever the order: a member that left gives way to any other.
      {{{"elastic/checkin/a.0.0/4", "failed x"}, {"exits/b.0.0", "signal 9"}}, "failure"},
      {{{"elastic/checkin/a.0.0/4", "interrupted"}, {"agents/c", "slots=1 workers=c.0.0"},
        {"elastic/checkin/c.0.0/0", "start"}}, "hosts_changed"},
      {{{"elastic/checkin/b.0.0/3", "drained"}, {"exits/a.0.0", "signal 9"}}, "failure"},
  };
  // clang-format on
  for (size_t i = 0; i < table.size(); ++i) {
    INFO("row " << i);
    AgentSnapshot s = snapshot(table[i].extra);
    REQUIRE(s.view.last_round);
    auto c = round_cause(*s.view.last_round, s);
    CHECK(std::string(c ? c->cause : "") == table[i].cause);
  }
}

TEST_CASE("agent cause: the reason names the worker") {
  AgentSnapshot s = snapshot({{"exits/b.0.0", "was killed by signal 9 (SIGKILL)"}});
  auto c = round_cause(*s.view.last_round, s);
  REQUIRE(c);
  CHECK(c->why == "worker b.0.0 on b was killed by signal 9 (SIGKILL)");
}
