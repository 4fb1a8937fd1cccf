// Agent mode's reading of a job's view (agent/agent_plan.h) and the policy's decisions on it
// (elastic_policy/node_round_plan.h), without etcd.
#include "agent/agent_plan.h"
#include "agent/agent_planner.h"

#include <catch2/catch.hpp>

using namespace cohort::discovery;
using cohort::elastic_policy::absent_nodes;
using cohort::elastic_policy::NodePlan;
using cohort::elastic_policy::nodes_in;
using cohort::elastic_policy::plan_node_round;
using cohort::elastic_policy::round_needed;

namespace {

// Two nodes of two slots whose four workers have checked in for their first round.
AgentJobView two_nodes_ready() {
  AgentJobView v;
  v.nodes["a"] = {2, {"a.0.0", "a.1.0"}};
  v.nodes["b"] = {2, {"b.0.0", "b.1.0"}};
  for (const auto& id : {"a.0.0", "a.1.0", "b.0.0", "b.1.0"}) v.checkins[id] = {0};
  return v;
}

std::vector<std::string> workers_of(const AgentRound& round) {
  std::vector<std::string> out;
  for (const auto& m : round.members) out.push_back(m.worker);
  return out;
}

}  // namespace

TEST_CASE("agent plan: the first round waits for min nodes whose workers have all checked in") {
  AgentJobView v = two_nodes_ready();
  CHECK_FALSE(round_needed(v, 3));
  CHECK(round_needed(v, 2));
  v.checkins.erase("b.1.0");
  CHECK_FALSE(round_needed(v, 2));
}

TEST_CASE("agent plan: the last call holds the first round back until MAX nodes or its end") {
  using std::chrono::seconds;
  const TimePoint t0 = steady_now();
  AgentJobView v = two_nodes_ready();
  AgentLastCall last_call(seconds(30), /*max_nodes=*/3);
  CHECK_FALSE(last_call.deadline());
  CHECK_FALSE(last_call.over(v, t0));  // it begins when MIN are first ready
  REQUIRE(last_call.deadline() == t0 + seconds(30));
  CHECK_FALSE(last_call.over(v, t0 + seconds(29)));
  CHECK(last_call.over(v, t0 + seconds(30)));
  v.nodes["c"] = {1, {"c.0.0"}};
  CHECK(AgentLastCall(seconds(30), 3).over(v, t0));  // MAX nodes are there: no wait at all
  CHECK(AgentLastCall(seconds(0), 4).over(v, t0));   // --rdzv-last-call 0
}

TEST_CASE("agent plan: the first round ranks nodes by name, slots in order") {
  NodePlan plan = plan_node_round(two_nodes_ready(), {.generation = 1});
  CHECK(workers_of(plan.round) == std::vector<std::string>{"a.0.0", "a.1.0", "b.0.0", "b.1.0"});
  CHECK(plan.round.generation == 1);
  CHECK(plan.waiting.empty());
  CHECK(nodes_in(plan.round) == 2);
}

TEST_CASE("agent plan: a node that is gone ends the round, the survivors keep their order") {
  AgentJobView v = two_nodes_ready();
  v.nodes["c"] = {1, {"c.0.0"}};
  v.checkins["c.0.0"] = {0};
  v.last_round_number = 0;
  v.last_round = AgentRound{0, {{"b.0.0", "b", 0}, {"b.1.0", "b", 0}, {"a.0.0", "a", 0}}, {}};
  CHECK_FALSE(round_needed(v, 1));
  v.nodes.erase("b");  // its lease expired
  CHECK(*round_needed(v, 1) == "worker b.0.0 of round 0 is gone");
  v.checkins["a.0.0"].insert(1);
  NodePlan plan = plan_node_round(v, {});
  // a.1.0 never made the last round; it and c's worker follow the survivor.
  CHECK(workers_of(plan.round) == std::vector<std::string>{"a.0.0", "a.1.0", "c.0.0"});
  CHECK(plan.round.members[0].entry == 1);
  CHECK(plan.round.members[1].entry == 0);
  CHECK(plan.waiting.empty());
}

TEST_CASE("agent plan: a member that checked in again ends the round, the others are waited for") {
  AgentJobView v = two_nodes_ready();
  v.last_round_number = 2;
  v.last_round = AgentRound{1, {{"a.0.0", "a", 3}, {"b.0.0", "b", 1}}, {}};
  v.checkins["a.0.0"] = {3};
  v.checkins["b.0.0"] = {1};
  CHECK_FALSE(round_needed(v, 1));
  v.checkins["b.0.0"].insert(2);
  CHECK(*round_needed(v, 1) == "worker b.0.0 left round 2");
  NodePlan plan = plan_node_round(v, {});
  CHECK(plan.waiting == std::vector<std::string>{"a.0.0"});
  CHECK(next_entry(v, "a.0.0") == 4);
  CHECK(next_entry(v, "a.1.0") == 0);
}

TEST_CASE("agent plan: max nodes drops the survivors of the nodes beyond it") {
  AgentJobView v = two_nodes_ready();
  v.last_round_number = 0;
  v.last_round = AgentRound{0, {{"a.0.0", "a", 0}, {"b.0.0", "b", 0}}, {}};
  v.checkins["a.0.0"].insert(1);
  v.checkins["b.0.0"].insert(1);
  NodePlan plan = plan_node_round(v, {.max_nodes = 1});
  CHECK(workers_of(plan.round) == std::vector<std::string>{"a.0.0", "a.1.0"});
  CHECK(plan.dropped == std::vector<std::string>{"b.0.0"});
}

TEST_CASE("agent plan: past the reset limit the plan is a stop, and no round follows it") {
  AgentJobView v = two_nodes_ready();
  v.last_round_number = 3;
  v.last_round = AgentRound{0, {{"a.0.0", "a", 3}}, {}};
  NodePlan plan = plan_node_round(v, {.reset_limit = 3});
  REQUIRE(plan.round.stop);
  CHECK(*plan.round.stop == "the reset limit of 3 was exceeded (round 4)");
  v.last_round = plan.round;
  CHECK_FALSE(round_needed(v, 1));
}

TEST_CASE("agent plan: a member that drained is left out of the next round") {
  AgentJobView v = two_nodes_ready();
  v.last_round_number = 0;
  v.last_round = plan_node_round(v, {.generation = 1}).round;
  v.checkins["b.1.0"].insert(1);  // drained at a commit: its node is leaving
  v.drained.insert("b.1.0");
  CHECK(round_needed(v, 1));
  NodePlan plan = plan_node_round(v, {.min_nodes = 1, .max_nodes = 2, .generation = 2});
  CHECK(workers_of(plan.round) == std::vector<std::string>{"a.0.0", "a.1.0", "b.0.0"});
}

TEST_CASE("agent plan: a member that finished is not gone, the others leaving it needs a round") {
  AgentJobView v = two_nodes_ready();
  v.last_round_number = 0;
  v.last_round = plan_node_round(v, {}).round;
  v.nodes["b"].workers = {"b.0.0"};  // b.1.0 exited 0 and its agent no longer lists it
  v.finished.insert("b.1.0");
  CHECK_FALSE(round_needed(v, 2));
  v.checkins["a.0.0"].insert(1);
  CHECK(round_needed(v, 2));
  NodePlan plan = plan_node_round(v, {});
  CHECK(workers_of(plan.round) == std::vector<std::string>{"a.0.0", "a.1.0", "b.0.0"});
}

TEST_CASE("agent plan: a worker whose node was counted as gone rejoins at the entry it waits at") {
  AgentJobView v = two_nodes_ready();
  v.last_round_number = 1;
  // Round 1 was planned while b's record was missing: only a's workers are in it.
  v.last_round = AgentRound{.generation = 2, .members = {{"a.0.0", "a", 1}, {"a.1.0", "a", 1}}};
  CHECK(absent_nodes(v).empty());
  v.checkins["b.0.0"] = {0, 1};  // it left round 0 and checked in again, as its peers did
  v.checkins["b.1.0"] = {0, 1};
  for (const auto& id : {"a.0.0", "a.1.0"}) v.checkins[id] = {0, 1, 2};
  NodePlan plan = plan_node_round(v, {.generation = 3});
  REQUIRE(plan.round.members.size() == 4);
  CHECK(plan.round.members[2] == AgentMember{"b.0.0", "b", 1});
  CHECK(plan.round.members[3] == AgentMember{"b.1.0", "b", 1});
  v.nodes.erase("a");
  CHECK(absent_nodes(v) == std::set<std::string>{"a"});
  v.finished = {"a.0.0", "a.1.0"};
  CHECK(absent_nodes(v).empty());  // members that finished are not waited for
}
