// The elastic host manager, on a fake clock: stable host order, rounds with survivors first and
// each host's ranks consecutive, slot retirement versus host blacklisting, cooldowns, and the
// checks that stop a job.
#include <catch2/catch.hpp>

#include "cohort/errors.h"
#include "launcher/elastic_hosts.h"

using namespace cohort::discovery;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

struct FakeClock {
  TimePoint now{};
  NowFn fn() {
    return [this] { return now; };
  }
};

std::vector<SlotRef> slots_of(const RoundPlan& plan) {
  std::vector<SlotRef> out;
  for (const auto& s : plan.slots) out.push_back({s.assignment.host, s.slot});
  return out;
}

ElasticHostsOptions with_cooldown(int min_np = 1) {
  return {.min_np = min_np, .cooldown = CooldownRange{10s, 60s}};
}

// Each host's ranks in `plan` are consecutive, and its local ranks count them 0, 1, ...
void check_hosts_consecutive(const RoundPlan& plan) {
  for (size_t r = 0; r < plan.slots.size(); ++r) {
    const auto& here = plan.slots[r].assignment;
    CAPTURE(r, here.host);
    CHECK(here.placement.rank == static_cast<int>(r));
    bool same_as_before = r > 0 && plan.slots[r - 1].assignment.host == here.host;
    CHECK(here.placement.local_rank ==
          (same_as_before ? plan.slots[r - 1].assignment.placement.local_rank + 1 : 0));
  }
}

}  // namespace

TEST_CASE("discovery updates keep the job's hosts in place and append new ones") {
  FakeClock clock;
  ElasticHosts hosts({}, clock.fn());
  auto changes = hosts.update({{"a", 2}, {"b", 2}});
  CHECK(changes.added == std::vector<SlotRef>{{"a", 0}, {"a", 1}, {"b", 0}, {"b", 1}});
  CHECK(changes.removed.empty());
  changes = hosts.update({{"c", 1}, {"b", 2}, {"a", 2}});
  CHECK(hosts.hosts() == std::vector<HostSlots>{{"a", 2}, {"b", 2}, {"c", 1}});
  CHECK(changes.describe() == "added c:0");
  changes = hosts.update({{"b", 3}, {"c", 1}});
  CHECK(hosts.hosts() == std::vector<HostSlots>{{"b", 3}, {"c", 1}});
  CHECK(changes.describe() == "added b:2; removed a:0-1");
  changes = hosts.update({{"a", 1}, {"b", 1}, {"c", 1}});  // a returns: it is new, so last
  CHECK(hosts.hosts() == std::vector<HostSlots>{{"b", 1}, {"c", 1}, {"a", 1}});
  CHECK(changes.describe() == "added a:0; removed b:1-2");
  CHECK(hosts.update({{"b", 1}, {"c", 1}, {"a", 1}}).describe() == "no change");
}

TEST_CASE("bad discovered sets are refused") {
  ElasticHosts hosts({});
  CHECK_THROWS_WITH(hosts.update({{"a", 1}, {"a", 2}}), Contains("'a' is listed twice"));
  CHECK_THROWS_WITH(hosts.update({{"a", 0}}), Contains("slot count 0"));
  CHECK_THROWS_WITH(hosts.update({{"a b", 1}}), Contains("not a valid host"));
}

TEST_CASE("options are checked") {
  CHECK_THROWS_WITH(ElasticHosts({.min_np = 0}), Contains("--min-np"));
  CHECK_THROWS_WITH(ElasticHosts({.min_np = 3, .max_np = 2}), Contains("--max-np 2"));
  CHECK_THROWS_WITH(ElasticHosts({.cooldown = CooldownRange{20s, 10s}}), Contains("LO <= HI"));
  CHECK_THROWS_WITH(ElasticHosts({.cooldown = CooldownRange{0s, 10s}}), Contains("0 < LO"));
  CHECK_THROWS_WITH(ElasticHosts({.reset_limit = -1}), Contains("--reset-limit"));
}

TEST_CASE("a first round fills hosts in order slot by slot up to max-np") {
  FakeClock clock;
  ElasticHosts hosts({.max_np = 5}, clock.fn());
  hosts.update({{"a", 2}, {"b", 4}});
  auto plan = hosts.plan_round({});
  CHECK(slots_of(plan) == std::vector<SlotRef>{{"a", 0}, {"a", 1}, {"b", 0}, {"b", 1}, {"b", 2}});
  const auto& last = plan.slots.back().assignment.placement;
  CHECK(last.rank == 4);
  CHECK(last.size == 5);
  CHECK(last.local_rank == 2);
  CHECK(last.local_size == 3);
  CHECK(last.cross_rank == 0);
  CHECK(last.cross_size == 1);
  CHECK(plan.slots[2].assignment.placement.cross_rank == 1);  // b:0 is the second local rank 0
  CHECK(plan.slots[0].assignment.placement.cross_size == 2);
  for (const auto& s : plan.slots) CHECK_FALSE(s.survivor);
}

TEST_CASE("survivors' hosts keep their order and each host's new slots follow its survivors") {
  FakeClock clock;
  ElasticHosts hosts({}, clock.fn());
  hosts.update({{"a", 2}, {"b", 2}});
  // Old ranks: b:1 was rank 1 and a:0 rank 3; the lowest surviving rank becomes rank 0.
  auto plan = hosts.plan_round({{"b", 1}, {"a", 0}});
  CHECK(slots_of(plan) == std::vector<SlotRef>{{"b", 1}, {"b", 0}, {"a", 0}, {"a", 1}});
  CHECK(plan.slots[0].survivor);
  CHECK_FALSE(plan.slots[1].survivor);
  CHECK(plan.slots[2].survivor);
  CHECK_FALSE(plan.slots[3].survivor);
  CHECK(plan.slots[0].assignment.placement.rank == 0);
  CHECK(plan.slots[0].assignment.placement.local_rank == 0);  // first rank on b
  CHECK(plan.slots[1].assignment.placement.local_rank == 1);  // b:0 after b:1, before a's ranks
  CHECK(plan.slots[2].assignment.placement.cross_rank == 1);  // a:0 is the second local rank 0
  CHECK(plan.dropped.empty());
  CHECK_THROWS_WITH(hosts.plan_round({{"a", 0}, {"a", 0}}), Contains("listed twice"));
}

TEST_CASE("a worker that replaces one on a host with survivors takes its rank among them") {
  FakeClock clock;
  ElasticHosts hosts(with_cooldown(), clock.fn());
  hosts.update({{"a", 1}, {"b", 2}, {"c", 2}});
  hosts.worker_failed("b", 0, /*others_on_host_alive=*/true);  // b's first rank, its leader
  auto without = hosts.plan_round({{"a", 0}, {"b", 1}, {"c", 0}, {"c", 1}});
  CHECK(slots_of(without) == std::vector<SlotRef>{{"a", 0}, {"b", 1}, {"c", 0}, {"c", 1}});
  clock.now += 10s;
  CHECK(hosts.refresh().describe() == "added b:0");
  // The old ranks 0 to 3: b:0 joins b's survivor, not after c's ranks.
  auto plan = hosts.plan_round({{"a", 0}, {"b", 1}, {"c", 0}, {"c", 1}});
  CHECK(slots_of(plan) == std::vector<SlotRef>{{"a", 0}, {"b", 1}, {"b", 0}, {"c", 0}, {"c", 1}});
  CHECK_FALSE(plan.slots[2].survivor);
  CHECK(plan.slots[2].assignment.placement.local_rank == 1);
  CHECK(plan.slots[3].assignment.placement.rank == 3);  // c's survivors move up one rank
  check_hosts_consecutive(plan);
}

TEST_CASE("a host that grows takes its new slot among its ranks") {
  FakeClock clock;
  ElasticHosts hosts({}, clock.fn());
  hosts.update({{"a", 1}, {"b", 2}, {"c", 2}});
  CHECK(hosts.update({{"a", 1}, {"b", 3}, {"c", 2}}).describe() == "added b:2");
  auto plan = hosts.plan_round({{"a", 0}, {"b", 0}, {"b", 1}, {"c", 0}, {"c", 1}});
  CHECK(slots_of(plan) ==
        std::vector<SlotRef>{{"a", 0}, {"b", 0}, {"b", 1}, {"b", 2}, {"c", 0}, {"c", 1}});
  CHECK(plan.slots[3].assignment.placement.local_rank == 2);
  check_hosts_consecutive(plan);
  // Workers that started but are not in a round yet come after the ranked ones, and join their
  // hosts the same way (ElasticPolicy::decide_round passes them so).
  auto joined = hosts.plan_round({{"a", 0}, {"b", 0}, {"b", 1}, {"c", 0}, {"c", 1}, {"b", 2}},
                                 /*fill_free_slots=*/false);
  CHECK(slots_of(joined) == slots_of(plan));
  check_hosts_consecutive(joined);
}

TEST_CASE("survivors without a usable slot or past max-np are dropped") {
  FakeClock clock;
  ElasticHosts hosts({.max_np = 3}, clock.fn());
  hosts.update({{"a", 2}, {"b", 2}, {"c", 2}});
  hosts.update({{"a", 1}, {"b", 2}, {"c", 2}});  // a:1 is gone
  auto plan = hosts.plan_round({{"a", 0}, {"a", 1}, {"b", 0}, {"b", 1}, {"c", 0}});
  CHECK(slots_of(plan) == std::vector<SlotRef>{{"a", 0}, {"b", 0}, {"b", 1}});
  CHECK(plan.dropped == std::vector<SlotRef>{{"a", 1}, {"c", 0}});
}

TEST_CASE("a single host job localhost:4 losing one worker keeps 3 slots") {
  FakeClock clock;
  ElasticHosts hosts({.min_np = 2}, clock.fn());
  hosts.update({{"localhost", 4}});
  auto changes = hosts.worker_failed("localhost", 1, /*others_on_host_alive=*/true);
  CHECK(changes.describe() == "removed localhost:1");
  REQUIRE(changes.penalized);  // for the event log: this slot, for good
  CHECK(changes.penalized->host == "localhost");
  CHECK(changes.penalized->slot == 1);
  CHECK(changes.penalized->failures == 1);
  CHECK_FALSE(changes.penalized->cooldown);
  CHECK_FALSE(hosts.refresh().penalized);
  CHECK(hosts.usable_slots() == 3);
  CHECK_FALSE(hosts.blacklisted("localhost"));
  CHECK_FALSE(hosts.stop_reason());
  auto plan = hosts.plan_round({{"localhost", 0}, {"localhost", 2}, {"localhost", 3}});
  CHECK(slots_of(plan) ==
        std::vector<SlotRef>{{"localhost", 0}, {"localhost", 2}, {"localhost", 3}});
  CHECK(plan.slots[2].assignment.placement.local_rank == 2);
  CHECK(plan.slots[2].assignment.placement.size == 3);
  CHECK(plan.dropped.empty());
}

TEST_CASE("a retired slot returns after its cooldown and backs off on repeated failures") {
  FakeClock clock;
  ElasticHosts hosts(with_cooldown(), clock.fn());
  hosts.update({{"localhost", 4}});
  hosts.worker_failed("localhost", 1, true);
  CHECK(hosts.next_wakeup() == clock.now + 10s);
  clock.now += 9999ms;
  CHECK(hosts.refresh().empty());
  clock.now += 1ms;
  CHECK(hosts.refresh().describe() == "added localhost:1");
  auto plan = hosts.plan_round({{"localhost", 0}, {"localhost", 2}, {"localhost", 3}});
  CHECK(plan.slots.back().slot == 1);  // refilled, after the survivors
  CHECK(plan.slots.back().assignment.placement.rank == 3);
  CHECK_FALSE(plan.slots.back().survivor);
  for (auto expected : {20s, 40s, 60s, 60s}) {  // LO * 2^(n-1), clamped to HI
    TimePoint failed_at = clock.now;
    hosts.worker_failed("localhost", 1, true);
    CHECK(hosts.next_wakeup() == failed_at + expected);
    clock.now += expected;
    CHECK(hosts.refresh().describe() == "added localhost:1");
  }
}

TEST_CASE("cooldowns back off exponentially within the range with optional jitter") {
  CooldownRange range{10s, 60s};
  CHECK(cooldown_after(range, 1, 0.0) == 10s);
  CHECK(cooldown_after(range, 2, 0.0) == 20s);
  CHECK(cooldown_after(range, 3, 0.0) == 40s);
  CHECK(cooldown_after(range, 4, 0.0) == 60s);
  CHECK(cooldown_after(range, 1000, 0.0) == 60s);
  CHECK(cooldown_after(range, 1, 0.5) == 15s);
  CHECK(cooldown_after(range, 3, 0.99) == 49900ms);
  CHECK(cooldown_after(range, 4, 0.5) == 60s);
  FakeClock clock;
  auto options = with_cooldown();
  options.jitter = [] { return 0.25; };
  ElasticHosts hosts(options, clock.fn());
  hosts.update({{"a", 1}, {"b", 1}});
  hosts.launch_failed("a");
  CHECK(hosts.next_wakeup() == clock.now + 12500ms);
}

TEST_CASE("a host whose last worker fails is blacklisted and the others continue") {
  FakeClock clock;
  ElasticHosts hosts(with_cooldown(2), clock.fn());
  hosts.update({{"a", 2}, {"b", 2}});
  hosts.worker_failed("b", 1, true);
  auto changes = hosts.worker_failed("b", 0, /*others_on_host_alive=*/false);
  CHECK(changes.describe() == "removed b:0");  // b:1 was already retired
  REQUIRE(changes.penalized);                  // the whole host, for its cooldown
  CHECK_FALSE(changes.penalized->slot);
  CHECK(changes.penalized->cooldown == 10s);
  CHECK(hosts.blacklisted("b"));
  CHECK(hosts.usable_slots() == 2);
  CHECK_FALSE(hosts.stop_reason());
  auto plan = hosts.plan_round({{"a", 0}, {"a", 1}});
  CHECK(slots_of(plan) == std::vector<SlotRef>{{"a", 0}, {"a", 1}});
  clock.now += 10s;  // b's blacklisting and b:1's retirement both end
  CHECK(hosts.refresh().describe() == "added b:0-1");
}

TEST_CASE("a drained host takes no work until discovery stops listing it") {
  FakeClock clock;
  ElasticHosts hosts({.min_np = 1}, clock.fn());
  hosts.update({{"a", 2}, {"b", 2}});
  auto changes = hosts.drain("b");
  CHECK(changes.describe() == "removed b:0-1");
  CHECK(changes.drained == std::vector<std::string>{"b"});
  CHECK(hosts.draining("b"));
  CHECK(hosts.drain("b").drained.empty());  // once
  CHECK_FALSE(hosts.usable({"b", 0}));
  CHECK(hosts.update({{"a", 2}, {"b", 2}}).empty());  // still listed: still drained
  CHECK(hosts.update({{"a", 2}}).empty());            // gone: forgotten
  CHECK(hosts.update({{"a", 2}, {"b", 2}}).describe() == "added b:0-1");  // back: a new host
  CHECK_FALSE(hosts.draining("b"));
}

TEST_CASE("discovery's ':drain' removes a host's slots while it is listed so") {
  FakeClock clock;
  ElasticHosts hosts({.min_np = 1}, clock.fn());
  hosts.update({{"a", 2}, {"b", 1}});
  auto changes = hosts.update({{"a", 2}, {"b", 1, true}});
  CHECK(changes.describe() == "removed b:0");
  CHECK(changes.drained == std::vector<std::string>{"b"});
  CHECK(hosts.update({{"a", 2}, {"b", 1, true}}).drained.empty());
  CHECK(hosts.update({{"a", 2}, {"b", 1}}).describe() == "added b:0");  // unmarked: back
  CHECK_FALSE(hosts.stop_reason());
  hosts.update({{"a", 2, true}, {"b", 1, true}});
  CHECK(hosts.stop_reason() == "every host drains or is blacklisted");
}

TEST_CASE("a host where launching fails is blacklisted and its survivors dropped") {
  FakeClock clock;
  ElasticHosts hosts(with_cooldown(), clock.fn());
  hosts.update({{"a", 2}, {"b", 2}});
  CHECK(hosts.launch_failed("b").describe() == "removed b:0-1");
  auto plan = hosts.plan_round({{"b", 0}, {"a", 0}});
  CHECK(slots_of(plan) == std::vector<SlotRef>{{"a", 0}, {"a", 1}});
  CHECK(plan.dropped == std::vector<SlotRef>{{"b", 0}});
}

TEST_CASE("without a cooldown range blacklisting and retirement are permanent") {
  FakeClock clock;
  ElasticHosts hosts({}, clock.fn());
  hosts.update({{"a", 2}, {"b", 2}});
  hosts.worker_failed("a", 1, true);
  hosts.launch_failed("b");
  CHECK_FALSE(hosts.next_wakeup());
  clock.now += 1000000s;
  CHECK(hosts.refresh().empty());
  CHECK(hosts.blacklisted("b"));
  CHECK(hosts.usable_slots() == 1);
  hosts.update({{"a", 2}});
  hosts.update({{"a", 2}, {"b", 2}});  // rediscovered, still blacklisted
  CHECK(hosts.usable_slots() == 1);
}

TEST_CASE("a blacklisted host returns only while discovery lists it") {
  FakeClock clock;
  ElasticHosts hosts(with_cooldown(), clock.fn());
  hosts.update({{"a", 1}, {"b", 1}});
  hosts.launch_failed("b");
  hosts.update({{"a", 1}});
  clock.now += 5s;
  CHECK(hosts.update({{"a", 1}, {"b", 1}}).empty());  // back in discovery, still cooling down
  clock.now += 5s;
  CHECK(hosts.refresh().describe() == "added b:0");
  hosts.launch_failed("b");  // second failure: 20 s
  hosts.update({{"a", 1}});
  clock.now += 30s;
  CHECK(hosts.refresh().empty());  // cooled down, but not discovered
  CHECK(hosts.update({{"a", 1}, {"b", 1}}).describe() == "added b:0");
}

TEST_CASE("all hosts blacklisted stops the job naming each host") {
  FakeClock clock;
  ElasticHosts hosts(with_cooldown(), clock.fn());
  hosts.update({{"a", 2}, {"b", 1}});
  for (int i = 0; i < 3; ++i) hosts.launch_failed("a");
  CHECK_FALSE(hosts.all_hosts_blacklisted());
  clock.now += 500ms;
  hosts.worker_failed("b", 0, false);
  CHECK(hosts.all_hosts_blacklisted() ==
        "all hosts are blacklisted: a (3 failures, for another 39.5 s), b (1 failure, for "
        "another 10 s)");
  CHECK(hosts.stop_reason() == hosts.all_hosts_blacklisted());
  ElasticHosts forever({}, clock.fn());
  forever.update({{"a", 1}});
  forever.launch_failed("a");
  CHECK(forever.all_hosts_blacklisted() ==
        "all hosts are blacklisted: a (1 failure, for good: no --blacklist-cooldown-range)");
}

TEST_CASE("fewer than min-np slots for longer than the elastic timeout stops the job") {
  FakeClock clock;
  ElasticHosts hosts({.min_np = 3, .elastic_timeout = 600s}, clock.fn());
  hosts.update({{"a", 2}});
  CHECK_FALSE(hosts.enough_slots());
  CHECK(hosts.next_wakeup() == clock.now + 600s);
  clock.now += 599s;
  CHECK_FALSE(hosts.elastic_timeout_expired());
  clock.now += 1s;
  CHECK(hosts.elastic_timeout_expired() ==
        "only 2 slots available, fewer than --min-np 3, for more than --elastic-timeout 600 s");
  CHECK(hosts.stop_reason() == hosts.elastic_timeout_expired());
  hosts.update({{"a", 2}, {"b", 1}});  // enough again: the clock stops
  CHECK(hosts.enough_slots());
  CHECK_FALSE(hosts.elastic_timeout_expired());
  CHECK_FALSE(hosts.next_wakeup());
  clock.now += 100s;
  TimePoint lost = clock.now;
  hosts.update({{"a", 2}});  // short again: a new timeout from now
  clock.now += 599s;
  CHECK_FALSE(hosts.elastic_timeout_expired());
  CHECK(hosts.next_wakeup() == lost + 600s);
}

TEST_CASE("a cooldown that ends in time ends the shortage even without a refresh") {
  FakeClock clock;
  ElasticHosts hosts({.min_np = 4, .elastic_timeout = 60s, .cooldown = CooldownRange{10s, 10s}},
                     clock.fn());
  hosts.update({{"localhost", 4}});
  hosts.worker_failed("localhost", 1, true);
  CHECK(hosts.next_wakeup() == clock.now + 10s);  // the cooldown comes before the timeout
  clock.now += 700s;
  CHECK_FALSE(hosts.elastic_timeout_expired());
  CHECK(hosts.enough_slots());
}
