// SpinPolicy (base/spin_policy.h): when a waiter spins before it sleeps, driven wait by wait.
#include "base/spin_policy.h"

#include <catch2/catch.hpp>

namespace cohort {
namespace {

// Runs `waits` waits that each end as `arrived` says (when they spin); returns how many spun.
int run(SpinPolicy& policy, int waits, bool arrived) {
  int spun = 0;
  for (int i = 0; i < waits; ++i) {
    if (!policy.should_spin()) continue;
    ++spun;
    policy.spun(arrived);
  }
  return spun;
}

TEST_CASE("SpinPolicy keeps spinning while the spins pay", "[spin_policy]") {
  SpinPolicy policy;
  CHECK(run(policy, 1000, true) == 1000);
  // Three misses in a row are not yet a pattern.
  CHECK(run(policy, 3, false) == 3);
  CHECK(policy.should_spin());
}

TEST_CASE("SpinPolicy pauses after four misses, then probes, longer each time", "[spin_policy]") {
  SpinPolicy policy;
  CHECK(run(policy, 4, false) == 4);
  // The first pause: 16 waits sleep at once, the 17th spins again (a probe).
  for (int i = 0; i < 16; ++i) CHECK_FALSE(policy.should_spin());
  CHECK(policy.should_spin());
  policy.spun(false);  // the probe misses: the next pause is twice as long
  for (int i = 0; i < 32; ++i) CHECK_FALSE(policy.should_spin());
  CHECK(policy.should_spin());
}

TEST_CASE("SpinPolicy's pause is bounded, and one hit restores spinning", "[spin_policy]") {
  SpinPolicy policy;
  // Misses only: pauses of 16, 32, ... 1024, and 1024 from then on.
  CHECK(run(policy, 4 + 16 + 1 + 32 + 1 + 64 + 1 + 128 + 1 + 256 + 1 + 512 + 1 + 1024, false) ==
        4 + 6);
  CHECK(policy.should_spin());
  policy.spun(false);
  int sleeps = 0;
  while (!policy.should_spin()) ++sleeps;
  CHECK(sleeps == 1024);
  policy.spun(true);  // the probe hits: spinning is back, and the next pause starts short again
  CHECK(run(policy, 100, true) == 100);
  CHECK(run(policy, 4, false) == 4);
  for (int i = 0; i < 16; ++i) CHECK_FALSE(policy.should_spin());
  CHECK(policy.should_spin());
}

}  // namespace
}  // namespace cohort
