// A fake clock and small helpers for driving ElasticPolicy through scenarios in milliseconds.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "elastic_policy/elastic_policy.h"
#include "elastic_policy/node_rounds.h"

namespace policy_test {

using namespace cohort::elastic_policy;
using namespace std::chrono_literals;
using Kind = RoundDecision::Kind;

struct FakeClock {
  TimePoint now{};
  NowFn fn() {
    return [this] { return now; };
  }
};

inline std::vector<SlotRef> slots_of(const RoundPlan& plan) {
  std::vector<SlotRef> out;
  for (const auto& s : plan.slots) out.push_back({s.assignment.host, s.slot});
  return out;
}

// A job on a fake clock: `running` are the hosts whose workers still run (for the discovery hold).
struct Job {
  FakeClock clock;
  ElasticPolicy policy;
  std::set<std::string> running;

  explicit Job(ElasticHostsOptions options) : policy(std::move(options), clock.fn()) {}
  SlotChanges discover(const std::vector<HostSlots>& listed) {
    return policy.discovered(listed, [this](const std::string& h) { return running.contains(h); });
  }
  // Every alive worker has checked in: the round decision for `wanted`.
  RoundDecision all_in(const std::vector<SlotRef>& wanted) {
    return policy.decide_round(wanted, true);
  }
  void advance(std::chrono::milliseconds by) { clock.now += by; }
};

}  // namespace policy_test
