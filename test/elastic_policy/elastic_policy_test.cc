// ElasticPolicy driven through the scenarios the process tests cover (test/scenarios/), on a fake
// clock: a failure during round formation, a second failure, cooldown expiry, the reset limit,
// min/max, drains, a discovery outage, every host blacklisted, the finish.
#include <catch2/catch.hpp>

#include "test/elastic_policy/policy_fixture.h"

using namespace policy_test;
using Catch::Matchers::Contains;

namespace {

const std::vector<HostSlots> kTwoByTwo{{"a", 2}, {"b", 2}};

ElasticHostsOptions options(int min_np, std::optional<int> max_np = std::nullopt) {
  return {.min_np = min_np,
          .max_np = max_np,
          .elastic_timeout = 60s,
          .cooldown = CooldownRange{10s, 60s}};
}

}  // namespace

TEST_CASE("min and max decide how many workers start and when the round forms") {
  struct Row {
    int min_np;
    std::optional<int> max_np;
    size_t started;  // workers started on an empty job of a:2 b:2
    size_t checked_in;
    Kind decision;
  };
  auto row =
      GENERATE(Row{1, std::nullopt, 4, 4, Kind::kForm}, Row{4, std::nullopt, 4, 4, Kind::kForm},
               Row{1, 3, 3, 3, Kind::kForm}, Row{3, 3, 3, 2, Kind::kWait},
               Row{5, std::nullopt, 4, 4, Kind::kWait}, Row{2, 2, 2, 2, Kind::kForm});
  Job job(options(row.min_np, row.max_np));
  job.policy.fixed_hosts(kTwoByTwo);
  auto start = job.policy.slots_to_start({});
  REQUIRE(start.size() == row.started);
  start.resize(row.checked_in);
  auto d = job.all_in(start);
  CHECK(d.kind == row.decision);
  if (d.kind == Kind::kForm) {
    CHECK(slots_of(d.plan) == start);
    CHECK(d.round == 0);
  }
}

TEST_CASE("a round waits until every wanted worker has checked in") {
  Job job(options(1));
  job.policy.fixed_hosts(kTwoByTwo);
  auto start = job.policy.slots_to_start({});
  CHECK(job.policy.decide_round(start, false).kind == Kind::kWait);
  CHECK(job.policy.decide_round({}, true).kind == Kind::kWait);
  CHECK(job.policy.round() == -1);
}

TEST_CASE("a failure during round formation retires the slot and the round forms without it") {
  Job job(options(2));
  job.policy.fixed_hosts(kTwoByTwo);
  auto changes = job.policy.worker_failed("a", 1, /*others_on_host_alive=*/true);
  CHECK(changes.removed == std::vector<SlotRef>{{"a", 1}});
  REQUIRE(changes.penalized);
  CHECK(changes.penalized->cooldown == 10s);
  std::vector<SlotRef> alive{{"a", 0}, {"b", 0}, {"b", 1}};
  CHECK(job.policy.slots_to_start(alive).empty());
  auto d = job.all_in(alive);
  REQUIRE(d.kind == Kind::kForm);
  CHECK(slots_of(d.plan) == alive);
  CHECK(d.plan.slots[0].assignment.placement.rank == 0);
  CHECK(job.policy.resets() == 0);
}

TEST_CASE("a second failure blacklists the host and counts a reset") {
  Job job(options(1));
  job.policy.fixed_hosts(kTwoByTwo);
  job.policy.worker_failed("a", 1, true);
  REQUIRE(job.all_in({{"a", 0}, {"b", 0}, {"b", 1}}).round == 0);
  job.advance(1s);
  auto changes = job.policy.worker_failed("a", 0, /*others_on_host_alive=*/false);
  CHECK(changes.removed == std::vector<SlotRef>{{"a", 0}});
  CHECK(job.policy.hosts().blacklisted("a"));
  auto d = job.all_in({{"b", 0}, {"b", 1}});
  REQUIRE(d.kind == Kind::kForm);
  CHECK(d.round == 1);
  CHECK(job.policy.resets() == 1);
  // The same slot failing again doubles its cooldown.
  job.advance(60s);
  job.policy.tick();
  CHECK(job.policy.worker_failed("b", 1, true).penalized->cooldown == 10s);
  job.advance(11s);
  job.policy.tick();
  CHECK(job.policy.worker_failed("b", 1, true).penalized->cooldown == 20s);
}

TEST_CASE("a cooldown that ends gives its slot back at next_wakeup") {
  Job job(options(1));
  job.policy.fixed_hosts(kTwoByTwo);
  TimePoint t0 = job.clock.now;
  job.policy.worker_failed("a", 1, true);
  CHECK(job.policy.next_wakeup() == t0 + 10s);
  job.advance(9999ms);
  CHECK(job.policy.tick().empty());
  CHECK_FALSE(job.policy.usable({"a", 1}));
  job.advance(1ms);
  CHECK(job.policy.tick().added == std::vector<SlotRef>{{"a", 1}});
  CHECK(job.policy.slots_to_start({{"a", 0}, {"b", 0}, {"b", 1}}) ==
        std::vector<SlotRef>{{"a", 1}});
}

TEST_CASE("a worker that replaces a failed one takes its rank among its host's survivors") {
  Job job(options(3));
  job.policy.fixed_hosts({{"a", 1}, {"b", 2}, {"c", 2}});
  auto all = job.policy.slots_to_start({});
  REQUIRE(job.all_in(all).round == 0);
  job.advance(1s);
  job.policy.worker_failed("b", 0, /*others_on_host_alive=*/true);  // b's leader
  std::vector<SlotRef> survivors{{"a", 0}, {"b", 1}, {"c", 0}, {"c", 1}};
  REQUIRE(slots_of(job.all_in(survivors).plan) == survivors);
  job.advance(10s);
  CHECK(job.policy.tick().added == std::vector<SlotRef>{{"b", 0}});
  REQUIRE(job.policy.slots_to_start(survivors) == std::vector<SlotRef>{{"b", 0}});
  // The wanted workers as the job passes them: the last round's in rank order, then the new one.
  auto wanted = survivors;
  wanted.push_back({"b", 0});
  auto d = job.all_in(wanted);
  REQUIRE(d.kind == Kind::kForm);
  CHECK(d.round == 2);
  CHECK(slots_of(d.plan) == std::vector<SlotRef>{{"a", 0}, {"b", 1}, {"b", 0}, {"c", 0}, {"c", 1}});
  std::vector<int> local_ranks;
  for (const auto& s : d.plan.slots) local_ranks.push_back(s.assignment.placement.local_rank);
  CHECK(local_ranks == std::vector<int>{0, 0, 1, 0, 1});
  CHECK(d.plan.slots[0].survivor);  // the lowest surviving rank is rank 0 still
}

TEST_CASE("the round past --reset-limit is not formed: the job stops") {
  auto o = options(1);
  o.reset_limit = 1;
  Job job(o);
  job.policy.fixed_hosts(kTwoByTwo);
  auto all = job.policy.slots_to_start({});
  CHECK(job.all_in(all).round == 0);
  CHECK(job.all_in(all).round == 1);
  auto d = job.all_in(all);
  CHECK(d.kind == Kind::kStop);
  CHECK_THAT(d.why, Contains("reset 2 times, more than --reset-limit 1"));
  CHECK(job.policy.round() == 1);
  CHECK_THAT(*job.policy.stop_reason(), Contains("more than --reset-limit 1"));
}

TEST_CASE("a drained host takes no work and the job stops once every host drains") {
  Job job(options(1));
  job.policy.fixed_hosts(kTwoByTwo);
  auto changes = job.policy.drained("a");
  CHECK(changes.drained == std::vector<std::string>{"a"});
  CHECK(changes.removed == std::vector<SlotRef>{{"a", 0}, {"a", 1}});
  CHECK(job.policy.slots_to_start({{"b", 0}}) == std::vector<SlotRef>{{"b", 1}});
  CHECK_FALSE(job.policy.stop_reason());
  CHECK(job.policy.drained("a").drained.empty());  // reported once
  job.policy.drained("b");
  CHECK(job.policy.stop_reason() == "every host drains or is blacklisted");
}

TEST_CASE("a failing discovery script is reported once per error and once when it recovers") {
  Job job(options(1));
  CHECK(job.policy.discovery_failed("exit 1").report_failure);
  CHECK_FALSE(job.policy.discovery_failed("exit 1").report_failure);
  CHECK(job.policy.discovery_failed("timed out").report_failure);
  CHECK(job.policy.discovery_worked().report_recovery);
  CHECK_FALSE(job.policy.discovery_worked().report_recovery);
}

TEST_CASE("a discovery gap holds the running hosts for --elastic-timeout") {
  Job job(options(2));
  job.running = {"a", "b"};
  TimePoint t0 = job.clock.now;
  job.discover({{"a", 1}, {"b", 1}});
  auto changes = job.discover({});  // an empty list while both hosts run workers
  CHECK(changes.empty());
  CHECK(job.policy.next_wakeup() == t0 + 60s);
  job.advance(59999ms);
  CHECK_FALSE(job.policy.hold_expired());
  job.advance(1ms);
  CHECK_THAT(*job.policy.hold_expired(), Contains("fewer than --min-np 2 slots"));
  // A list with enough slots ends the hold.
  job.discover({{"a", 1}, {"b", 1}});
  CHECK_FALSE(job.policy.hold_expired());
}

TEST_CASE("a gap that keeps no running host removes the hosts") {
  Job job(options(2));
  job.discover({{"a", 1}, {"b", 1}});
  CHECK(job.discover({}).removed.size() == 2);
  CHECK_FALSE(job.policy.hold_expired());
}

TEST_CASE("fewer than --min-np slots for longer than --elastic-timeout stops the job") {
  Job job(options(3));
  job.policy.fixed_hosts(kTwoByTwo);
  job.policy.launch_failed("a");  // a for 10 s: 2 slots left
  job.advance(9s);
  CHECK_FALSE(job.policy.stop_reason());
  job.advance(1s);  // a returns: the shortage ends
  job.policy.tick();
  job.policy.launch_failed("a");  // 20 s this time
  CHECK(job.policy.hosts().blacklisted("a"));
  job.advance(20s);
  job.policy.tick();
  CHECK_FALSE(job.policy.stop_reason());
  auto o = options(3);
  o.cooldown.reset();
  Job stuck(o);
  stuck.policy.fixed_hosts(kTwoByTwo);
  stuck.policy.worker_failed("a", 0, true);
  stuck.policy.worker_failed("a", 1, true);
  stuck.advance(59999ms);
  CHECK_FALSE(stuck.policy.stop_reason());
  stuck.advance(1ms);
  CHECK_THAT(*stuck.policy.stop_reason(), Contains("fewer than --min-np 3"));
}

TEST_CASE("every host blacklisted stops the job at once") {
  Job job(options(1));
  job.policy.fixed_hosts(kTwoByTwo);
  job.policy.launch_failed("a");
  CHECK_FALSE(job.policy.stop_reason());
  job.policy.launch_failed("b");
  CHECK_THAT(*job.policy.stop_reason(), Contains("all hosts are blacklisted"));
  job.advance(10s);  // both cooldowns end
  job.policy.tick();
  CHECK_FALSE(job.policy.stop_reason());
}

TEST_CASE("a finished worker: no new workers and the rest may finish below --min-np") {
  Job job(options(3));
  job.policy.fixed_hosts(kTwoByTwo);
  REQUIRE(job.all_in(job.policy.slots_to_start({})).round == 0);
  CHECK_FALSE(job.policy.job_done(false, true));
  job.policy.worker_finished();
  CHECK(job.policy.slots_to_start({{"a", 0}}).empty());
  auto d = job.all_in({{"a", 0}});  // one left, --min-np 3
  CHECK(d.kind == Kind::kForm);
  CHECK_FALSE(job.policy.job_done(false, true));
  CHECK(job.policy.job_done(true, true));
  CHECK(job.policy.job_done(false, false));
}

TEST_CASE("resets are counted per round after the first and never without a limit") {
  Job job(options(1));
  job.policy.fixed_hosts(kTwoByTwo);
  auto all = job.policy.slots_to_start({});
  for (int i = 0; i <= 1000; ++i) REQUIRE(job.all_in(all).kind == Kind::kForm);
  CHECK(job.policy.resets() == 1000);
  CHECK_FALSE(job.policy.stop_reason());
}
