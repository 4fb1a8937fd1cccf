// The rules both elastic modes share (elastic_policy.h): the fewest a round may have, the reset
// limit, the penalty after a failure and the first round's last call; and agent mode's terms for
// them (node_rounds.h: the round's order, planning, the node's cooldown and its drain).
#include <catch2/catch.hpp>

#include "test/elastic_policy/policy_fixture.h"

using namespace policy_test;

TEST_CASE("round_size_needed and reset_limit_exceeded") {
  CHECK(round_size_needed(3, false) == 3);
  CHECK(round_size_needed(3, true) == 1);
  struct Row {
    int resets;
    std::optional<int> limit;
    bool exceeded;
  };
  auto row = GENERATE(Row{0, std::nullopt, false}, Row{100, std::nullopt, false}, Row{0, 0, false},
                      Row{1, 0, true}, Row{2, 2, false}, Row{3, 2, true});
  CHECK(reset_limit_exceeded(row.resets, row.limit) == row.exceeded);
}

TEST_CASE("penalty_after doubles from LO up to HI and is for good without a range") {
  CooldownRange range{10s, 60s};
  struct Row {
    int failures;
    double jitter;
    std::chrono::milliseconds penalty;
  };
  auto row = GENERATE(Row{1, 0.0, 10s}, Row{2, 0.0, 20s}, Row{3, 0.0, 40s}, Row{4, 0.0, 60s},
                      Row{1, 0.5, 15s}, Row{100, 0.0, 60s});
  CHECK(penalty_after(range, row.failures, row.jitter) == row.penalty);
  CHECK_FALSE(penalty_after(std::nullopt, row.failures));
}

TEST_CASE("the last call waits for more until its end unless max are ready") {
  TimePoint t0{};
  LastCall call(5s, 4);
  CHECK_FALSE(call.deadline());
  CHECK_FALSE(call.over(2, t0));
  CHECK(call.began_now());
  CHECK_FALSE(call.began_now());  // said once
  CHECK(call.deadline() == t0 + 5s);
  CHECK_FALSE(call.over(3, t0 + 4999ms));
  CHECK(call.over(3, t0 + 5s));
  LastCall full(5s, 4);
  CHECK(full.over(4, t0));  // max ready: no wait
  CHECK_FALSE(full.began_now());
  LastCall none(0s, 4);
  CHECK(none.over(2, t0));
  CHECK_FALSE(none.began_now());
}

TEST_CASE("round_node_order puts the survivors' nodes first and keeps at most max nodes") {
  using V = std::vector<std::string>;
  CHECK(round_node_order({"c", "c", "a"}, {"a", "b", "c", "d"}, 10) == V{"c", "a", "b", "d"});
  CHECK(round_node_order({"c", "a"}, {"a", "b", "c", "d"}, 3) == V{"c", "a", "b"});
  CHECK(round_node_order({}, {"a", "b"}, 1) == V{"a"});
  CHECK(round_node_order({"b"}, {"a", "b"}, 0).empty());
}

TEST_CASE("a round being planned waits for survivors then for enough nodes then stops") {
  using K = PlanningDecision::Kind;
  TimePoint t0{};
  NodeRoundLimits limits{.min_nodes = 2, .checkin_timeout = 10s, .elastic_timeout = 60s};
  struct Row {
    bool waiting;
    int nodes;
    bool finished;
    std::chrono::milliseconds at;
    K kind;
    bool give_up;
    int needed;
  };
  auto row = GENERATE(Row{true, 3, false, 9999ms, K::kWait, false, 2},
                      Row{true, 3, false, 10s, K::kWait, true, 2},  // survivors taken for failed
                      Row{false, 1, false, 59999ms, K::kWait, false, 2},
                      Row{false, 1, false, 60s, K::kStop, false, 2},
                      Row{false, 0, true, 60s, K::kStop, false, 1},
                      Row{false, 1, true, 0ms, K::kForm, false, 1},  // finishing: 1 is enough
                      Row{false, 2, false, 0ms, K::kForm, false, 2});
  auto d = decide_planning({row.waiting, row.nodes, row.finished}, limits, t0, t0 + row.at);
  CHECK(d.kind == row.kind);
  CHECK(d.give_up_on_waiting == row.give_up);
  CHECK(d.needed == row.needed);
}

TEST_CASE("the first round is waited for --elastic-timeout from the agent's start then stops") {
  TimePoint t0{};
  NodeRoundLimits limits{.min_nodes = 3, .elastic_timeout = 60s};
  CHECK(first_round_deadline(limits, t0 + 5s) == t0 + 65s);
  struct Row {
    int nodes;
    std::chrono::milliseconds at;
    const char* stop;  // "": it may wait
  };
  auto row = GENERATE(Row{0, 0ms, ""}, Row{2, 59999ms, ""},
                      Row{2, 60s, "only 2 of --nnodes 3 nodes came within --elastic-timeout 60 s"},
                      Row{0, 90s, "only 0 of --nnodes 3 nodes came within --elastic-timeout 60 s"});
  auto why = first_round_stop(row.nodes, limits, t0, t0 + row.at);
  CHECK(std::string(why ? *why : "") == row.stop);
}

TEST_CASE("a worker that does not check in by --start-timeout is taken for failed in both modes") {
  TimePoint t0{};
  TimePoint due = start_due(t0 + 1s, 120s);
  CHECK(due == t0 + 121s);
  struct Row {
    bool checked_in;
    std::chrono::milliseconds at;
    bool overdue;
  };
  auto row = GENERATE(Row{false, 120999ms, false}, Row{false, 121s, true},
                      Row{true, 121s, false},  // it checked in: never overdue
                      Row{true, 500s, false}, Row{false, 500s, true});
  auto why = start_overdue(due, row.checked_in, 120s, t0 + row.at);
  CHECK(why.has_value() == row.overdue);
  if (why) {
    CHECK(*why ==
          "did not check in within --start-timeout 120 s; taking it for failed and killing it");
  }
}

TEST_CASE("an agent's node sits out its cooldown after each failure and registers only with work") {
  struct Row {
    std::optional<CooldownRange> range;
    std::vector<std::chrono::milliseconds> failures_at;  // one failure at each of these times
    std::optional<std::chrono::milliseconds> last_wait;
  };
  auto row = GENERATE(Row{CooldownRange{10s, 60s}, {0s}, 10s},
                      Row{CooldownRange{10s, 60s}, {0s, 20s}, 20s},
                      Row{CooldownRange{10s, 60s}, {0s, 20s, 50s, 100s}, 60s},
                      Row{std::nullopt, {5s}, std::nullopt});
  FakeClock clock;
  NodeCooldown cooldown(row.range);
  CHECK(cooldown.may_start(clock.now));
  CHECK(cooldown.may_register(0));
  std::optional<std::chrono::milliseconds> wait;
  for (auto at : row.failures_at) {
    clock.now = TimePoint{} + at;
    wait = cooldown.failed(clock.now);
  }
  CHECK(wait == row.last_wait);
  CHECK(cooldown.failures() == static_cast<int>(row.failures_at.size()));
  if (!wait) {  // no range: the node leaves the job, and no cooldown holds it
    CHECK_FALSE(cooldown.until());
    return;
  }
  REQUIRE(cooldown.until() == clock.now + *wait);
  CHECK_FALSE(cooldown.may_register(0));  // a record without workers would offer the node
  CHECK(cooldown.may_register(1));
  CHECK_FALSE(cooldown.may_start(clock.now + *wait - 1ms));
  CHECK(cooldown.until());
  CHECK(cooldown.may_start(clock.now + *wait));  // the first call past it ends the cooldown
  CHECK_FALSE(cooldown.until());
  CHECK(cooldown.may_register(0));
}

TEST_CASE(
    "an agent's node drains whole once one of its workers drained and leaves when none is left") {
  struct Row {
    std::vector<std::string> workers;
    std::set<std::string> drained;
    std::optional<std::string> first;
  };
  auto row = GENERATE(Row{{"a.0.0", "a.1.0"}, {}, std::nullopt},
                      Row{{"a.0.0", "a.1.0"}, {"b.0.0"}, std::nullopt},
                      Row{{"a.0.0", "a.1.0"}, {"a.1.0"}, "a.1.0"},
                      Row{{"a.1.0", "a.0.0"}, {"a.0.0", "a.1.0"}, "a.1.0"});
  NodeDrain drain;
  CHECK_FALSE(drain.leaves(0));  // a node that does not drain never leaves for it
  CHECK(drain.begins(row.workers, row.drained) == row.first);
  CHECK(drain.draining() == row.first.has_value());
  CHECK_FALSE(drain.begins(row.workers, row.drained));  // it begins once
  CHECK_FALSE(drain.leaves(1));
  CHECK(drain.leaves(0) == row.first.has_value());
}
