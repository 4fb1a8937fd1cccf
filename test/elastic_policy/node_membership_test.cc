// Agent mode's rules on who may take part (elastic_policy/node_round_plan.h, node_rounds.h): a
// node outside a full last round waits, the job is done once the last round's members finished,
// and nodes without a record count as gone only under the planner's own lease and past the grace
// after it registered again. Tables of what the agents published, on a fake clock.
#include <catch2/catch.hpp>

#include "elastic_policy/node_round_plan.h"
#include "elastic_policy/node_rounds.h"

namespace {

using namespace cohort::elastic_policy;
using namespace std::chrono_literals;

// Nodes a and b in round 0 (one worker each); c is live with one worker, not in the round.
NodeJobView round_of_a_and_b() {
  NodeJobView v;
  v.nodes["a"] = {1, {"a.0.0"}};
  v.nodes["b"] = {1, {"b.0.0"}};
  v.nodes["c"] = {1, {"c.0.0"}};
  v.last_round_number = 0;
  v.last_round = NodeRound{1, {{"a.0.0", "a", 0}, {"b.0.0", "b", 0}}, {}};
  return v;
}

}  // namespace

TEST_CASE(
    "node_may_start: a node outside a last round of max nodes waits and none starts once "
    "finishing") {
  struct Row {
    const char* node;
    int max_nodes;
    bool a_worker_finished;
    bool no_round_yet;
    NodeStart start;
  };
  auto row = GENERATE(Row{"c", 2, false, false, NodeStart::kRoundFull},  // round full: c waits
                      Row{"c", 3, false, false, NodeStart::kStart},      // room for c
                      Row{"a", 2, false, false, NodeStart::kStart},     // a member replaces its own
                      Row{"c", 2, false, true, NodeStart::kStart},      // no round yet
                      Row{"c", 3, true, false, NodeStart::kFinishing},  // finishing: nobody starts
                      Row{"a", 2, true, false, NodeStart::kFinishing});
  NodeJobView v = round_of_a_and_b();
  if (row.a_worker_finished) v.finished.insert("b.0.0");
  if (row.no_round_yet) {
    v.last_round.reset();
    v.last_round_number = -1;
  }
  CHECK(node_may_start(v, row.node, row.max_nodes) == row.start);
}

TEST_CASE("node_job_done: every member of the last round finished and a stop is no finish") {
  struct Row {
    std::set<std::string> finished;
    bool stop;
    bool no_round;
    bool done;
  };
  auto row = GENERATE(Row{{}, false, false, false}, Row{{"a.0.0"}, false, false, false},
                      Row{{"a.0.0", "b.0.0"}, false, false, true},
                      Row{{"a.0.0", "b.0.0", "c.0.0"}, false, false, true},
                      Row{{"c.0.0"}, false, false, false},  // not a member
                      Row{{"a.0.0", "b.0.0"}, true, false, false},
                      Row{{"a.0.0", "b.0.0"}, false, true, false});
  NodeJobView v = round_of_a_and_b();
  v.finished = row.finished;
  if (row.stop) v.last_round = NodeRound{.stop = "the reset limit"};
  if (row.no_round) v.last_round.reset();
  CHECK(node_job_done(v) == row.done);
}

TEST_CASE("absent_nodes: the last round's unfinished members whose node has no record") {
  NodeJobView v = round_of_a_and_b();
  CHECK(absent_nodes(v).empty());
  v.nodes.erase("b");
  CHECK(absent_nodes(v) == std::set<std::string>{"b"});
  v.finished.insert("b.0.0");
  CHECK(absent_nodes(v).empty());  // a member that finished is not waited for
  v.finished.clear();
  v.last_round->stop = "stopped";
  CHECK(absent_nodes(v).empty());
}

TEST_CASE(
    "AbsentNodes: record-less nodes are gone only under the planner's lease and past the "
    "rejoin grace") {
  struct Row {
    const char* when;
    bool absent;                                           // b has no record
    std::optional<std::chrono::milliseconds> rejoined_at;  // the planner registered again then
    std::chrono::milliseconds answered_at;                 // etcd's last answer
    bool lease_alive;
    bool gone;
    bool lease_asked;
  };
  auto row =
      GENERATE(Row{"nobody absent", false, {}, 0ms, false, true, false},
               Row{"absent under a live lease", true, {}, 0ms, true, true, true},
               Row{"absent but the planner's lease is gone", true, {}, 0ms, false, false, true},
               Row{"within the grace after a rejoin", true, 0ms, 9999ms, true, false, false},
               Row{"the grace is over once etcd answers past it", true, 0ms, 10s, true, true, true},
               Row{"past the grace but the lease is gone", true, 0ms, 10s, false, false, true});
  INFO(row.when);
  TimePoint t0{};
  NodeJobView v = round_of_a_and_b();
  if (row.absent) v.nodes.erase("b");
  AbsentNodes absent;
  if (row.rejoined_at) absent.rejoined(t0 + *row.rejoined_at, 10s);
  absent.answered(t0 + row.answered_at);
  bool asked = false;
  CHECK(absent.count_as_gone(v, [&] {
    asked = true;
    return row.lease_alive;
  }) == row.gone);
  CHECK(asked == row.lease_asked);
  if (row.rejoined_at) {
    CHECK(absent.grace_until().has_value() == (row.answered_at < 10s));
  }
}
