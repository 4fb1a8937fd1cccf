// Rule 4 in agent mode's terms (elastic_policy/node_round_plan.h): when a round is needed and who
// is in it, as tables of what the agents published. These rules read no clock: the waits around
// them (decide_planning, LastCall) have their own tables in elastic_policy_rules_test.cc.
#include <catch2/catch.hpp>

#include "elastic_policy/node_round_plan.h"

namespace {

using namespace cohort::elastic_policy;

// Nodes a and b, two slots each; round 0 had all four workers, each at entry 0.
NodeJobView after_round0() {
  NodeJobView v;
  v.nodes["a"] = {2, {"a.0.0", "a.1.0"}};
  v.nodes["b"] = {2, {"b.0.0", "b.1.0"}};
  for (const auto* id : {"a.0.0", "a.1.0", "b.0.0", "b.1.0"}) v.checkins[id] = {0};
  v.last_round_number = 0;
  v.last_round = NodeRound{
      1, {{"a.0.0", "a", 0}, {"a.1.0", "a", 0}, {"b.0.0", "b", 0}, {"b.1.0", "b", 0}}, {}};
  return v;
}

std::vector<std::string> workers_of(const NodeRound& round) {
  std::vector<std::string> out;
  for (const auto& m : round.members) out.push_back(m.worker);
  return out;
}

}  // namespace

TEST_CASE("round_needed: the first round once min nodes have all their workers checked in") {
  struct Row {
    int nodes;
    bool all_checked_in;
    int min_nodes;
    std::optional<std::string> why;
  };
  auto row = GENERATE(Row{1, true, 2, {}}, Row{2, false, 2, {}},
                      Row{2, true, 2, "the first round: 2 nodes are ready"},
                      Row{3, true, 2, "the first round: 3 nodes are ready"});
  NodeJobView v;
  for (int n = 0; n < row.nodes; ++n) {
    std::string node(1, static_cast<char>('a' + n));
    v.nodes[node] = {1, {node + ".0.0"}};
    if (n > 0 || row.all_checked_in) v.checkins[node + ".0.0"] = {0};
  }
  CHECK(round_needed(v, row.min_nodes) == row.why);
}

TEST_CASE(
    "round_needed: a member gone or checked in again ends the round but not one finished or a "
    "stop") {
  struct Row {
    const char* event;
    void (*apply)(NodeJobView&);
    std::optional<std::string> why;
  };
  auto row = GENERATE(
      Row{"nothing", [](NodeJobView&) {}, {}},
      Row{"b's lease expired", [](NodeJobView& v) { v.nodes.erase("b"); },
          "worker b.0.0 of round 0 is gone"},
      Row{"b no longer lists b.1.0", [](NodeJobView& v) { v.nodes["b"].workers = {"b.0.0"}; },
          "worker b.1.0 of round 0 is gone"},
      Row{"a.1.0 checked in again", [](NodeJobView& v) { v.checkins["a.1.0"].insert(1); },
          "worker a.1.0 left round 0"},
      Row{"b.1.0 finished and is no longer listed",
          [](NodeJobView& v) {
            v.nodes["b"].workers = {"b.0.0"};
            v.finished.insert("b.1.0");
          },
          {}},
      Row{"the last round is a stop",
          [](NodeJobView& v) {
            v.last_round->stop = "the reset limit of 0 was exceeded (round 1)";
            v.nodes.erase("b");
          },
          {}});
  CAPTURE(row.event);
  NodeJobView v = after_round0();
  row.apply(v);
  CHECK(round_needed(v, 2) == row.why);
}

TEST_CASE(
    "plan_node_round: survivors keep their order and newcomers join their node's ranks node by "
    "node up to max") {
  struct Row {
    const char* event;
    void (*apply)(NodeJobView&);
    int max_nodes;
    std::vector<std::string> members, waiting, dropped;
  };
  auto row = GENERATE(Row{"b is gone; c joined",
                          [](NodeJobView& v) {
                            v.nodes.erase("b");
                            v.nodes["c"] = {1, {"c.0.0"}};
                            v.checkins["c.0.0"] = {0};
                            v.checkins["a.1.0"].insert(1);
                          },
                          8,
                          {"a.0.0", "a.1.0", "c.0.0"},
                          {"a.0.0"},
                          {}},
                      Row{"b.1.0 drained",
                          [](NodeJobView& v) { v.drained.insert("b.1.0"); },
                          8,
                          {"a.0.0", "a.1.0", "b.0.0"},
                          {"a.0.0", "a.1.0", "b.0.0"},
                          {}},
                      Row{"max one node",
                          [](NodeJobView&) {},
                          1,
                          {"a.0.0", "a.1.0"},
                          {"a.0.0", "a.1.0"},
                          {"b.0.0", "b.1.0"}},
                      Row{"a.1.0 is gone and a.1.1 replaced it: a's ranks stay together",
                          [](NodeJobView& v) {
                            v.nodes["a"].workers = {"a.0.0", "a.1.1"};
                            v.checkins["a.1.1"] = {0};
                          },
                          8,
                          {"a.0.0", "a.1.1", "b.0.0", "b.1.0"},
                          {"a.0.0", "b.0.0", "b.1.0"},
                          {}},
                      Row{"b.0.0 is gone and b.0.1 replaced it: after b.1.0, b's survivor",
                          [](NodeJobView& v) {
                            v.nodes["b"].workers = {"b.0.1", "b.1.0"};
                            v.checkins["b.0.1"] = {0};
                          },
                          8,
                          {"a.0.0", "a.1.0", "b.1.0", "b.0.1"},
                          {"a.0.0", "a.1.0", "b.1.0"},
                          {}},
                      Row{"a newcomer that has not checked in waits outside",
                          [](NodeJobView& v) { v.nodes["a"].workers.push_back("a.2.0"); },
                          8,
                          {"a.0.0", "a.1.0", "b.0.0", "b.1.0"},
                          {"a.0.0", "a.1.0", "b.0.0", "b.1.0"},
                          {}});
  CAPTURE(row.event);
  NodeJobView v = after_round0();
  row.apply(v);
  NodePlan plan = plan_node_round(v, {.max_nodes = row.max_nodes, .generation = 2});
  CHECK(workers_of(plan.round) == row.members);
  CHECK(plan.waiting == row.waiting);
  CHECK(plan.dropped == row.dropped);
  CHECK(plan.round.generation == 2);
  CHECK_FALSE(plan.round.stop);
}

TEST_CASE("plan_node_round: the round past --reset-limit is a stop") {
  NodeJobView v = after_round0();
  v.last_round_number = 2;
  CHECK_FALSE(plan_node_round(v, {.reset_limit = 3}).round.stop);
  v.last_round_number = 3;
  NodePlan plan = plan_node_round(v, {.reset_limit = 3});
  CHECK(plan.round.stop == "the reset limit of 3 was exceeded (round 4)");
  CHECK(plan.round.members.empty());
  CHECK_FALSE(plan_node_round(v, {}).round.stop);
}

TEST_CASE("plan_node_round: once a worker finished, newcomers are left out (rule 10)") {
  NodeJobView v = after_round0();
  v.finished.insert("a.0.0");
  v.nodes["a"].workers = {"a.1.0"};
  v.nodes.erase("b");  // b is gone
  v.nodes["c"] = {1, {"c.0.0"}};
  v.checkins["c.0.0"] = {0};
  v.checkins["a.1.0"].insert(1);
  NodePlan plan = plan_node_round(v, {.max_nodes = 8, .generation = 2});
  CHECK(workers_of(plan.round) == std::vector<std::string>{"a.1.0"});
  v.finished.clear();
  plan = plan_node_round(v, {.max_nodes = 8, .generation = 2});
  CHECK(workers_of(plan.round) == std::vector<std::string>{"a.1.0", "c.0.0"});
}
