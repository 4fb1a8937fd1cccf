// The exactly-once promise under randomized sequences of training steps, commits, failures
// (rollback, then a new world of any size where joiners start fresh) and world changes at a
// commit (no rollback), all simulated in one process.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>

#include "sim_world.h"

namespace {

struct Run {
  std::mt19937_64 rng;
  sim::World world;
  uint64_t batch;
  std::vector<int> trained;                    // committed-history count per sample, this epoch
  std::vector<std::vector<uint64_t>> pending;  // per rank: trained since the last commit
  uint64_t retrained = 0;                      // samples whose training was lost to a rollback
  uint64_t current_epoch = 0;
  int failures = 0, resizes = 0, commits = 0;

  int random_size() { return 1 + static_cast<int>(rng() % 6); }
  bool chance(int percent) { return static_cast<int>(rng() % 100) < percent; }

  void commit() {
    world.commit();
    ++commits;
    for (auto& p : pending) {
      for (uint64_t s : p) ++trained[s];
      p.clear();
    }
  }

  // Right after any repartition: the committed remainder is split evenly and everyone agrees.
  void check_partition() {
    int n = world.size();
    uint64_t left = world[0].unprocessed(), lo = UINT64_MAX, hi = 0, sum = 0;
    for (int r = 0; r < n; ++r) {
      REQUIRE(world[r].unprocessed() == left);
      REQUIRE(world[r].steps(batch) == world[0].steps(batch));
      uint64_t mine = world[r].remaining();
      lo = std::min(lo, mine);
      hi = std::max(hi, mine);
      sum += mine;
    }
    REQUIRE(hi - lo <= 1);
    REQUIRE(sum == left);
  }

  void fail() {
    ++failures;
    for (auto& p : pending) retrained += p.size();
    world.restore();
    world.resize_and_sync(random_size());
    pending.assign(static_cast<size_t>(world.size()), {});
    check_partition();
    // A rollback to before set_epoch() returns to the previous (complete) epoch; the training
    // loop, whose epoch counter is tracked too, moves on to this epoch again.
    if (world[0].epoch() != current_epoch) {
      REQUIRE(world[0].unprocessed() == 0);
      for (int r = 0; r < world.size(); ++r) world[r].set_epoch(current_epoch);
      check_partition();
    }
  }

  void resize_at_commit() {
    ++resizes;
    commit();
    world.resize_and_sync(random_size());
    pending.assign(static_cast<size_t>(world.size()), {});
    check_partition();
  }

  // One pass of the training loop over the current partition; returns false if interrupted.
  bool train_pass() {
    int n = world.size();
    std::vector<cohort::elastic::Batches> ranges;
    for (int r = 0; r < n; ++r) ranges.push_back(world[r].batches(batch));
    uint64_t steps = ranges[0].size();
    for (auto& range : ranges) REQUIRE(range.size() == steps);
    std::vector<cohort::elastic::Batches::iterator> its;
    for (auto& range : ranges) its.push_back(range.begin());
    for (uint64_t step = 0; step < steps; ++step) {
      for (int r = 0; r < n; ++r) {
        const auto& b = *its[static_cast<size_t>(r)];
        world[r].record(b);
        pending[static_cast<size_t>(r)].insert(pending[static_cast<size_t>(r)].end(), b.begin(),
                                               b.end());
        ++its[static_cast<size_t>(r)];
      }
      if (chance(25)) commit();
      if (chance(4)) return fail(), false;
      if (chance(3)) return resize_at_commit(), false;
    }
    for (auto& it : its) REQUIRE(it == std::default_sentinel);
    return true;
  }

  void epoch(uint64_t e) {
    std::fill(trained.begin(), trained.end(), 0);
    current_epoch = e;
    for (int r = 0; r < world.size(); ++r) world[r].set_epoch(e);
    check_partition();
    while (!train_pass()) {
    }
    if (chance(30)) fail();  // a failure after the last batch: the tail is redone
    while (!train_pass()) {
    }
    commit();
    REQUIRE(world[0].unprocessed() == 0);
    for (size_t s = 0; s < trained.size(); ++s) {
      INFO("sample " << s << " in epoch " << e);
      REQUIRE(trained[s] == 1);
    }
  }
};

}  // namespace

TEST_CASE("exactly once across random commits, rollbacks and world-size changes") {
  int total_failures = 0, total_resizes = 0;
  uint64_t total_retrained = 0;
  for (uint64_t trial = 0; trial < 300; ++trial) {
    std::mt19937_64 rng(trial);
    uint64_t n = 1 + rng() % 3000;
    int size = 1 + static_cast<int>(rng() % 6);
    Run run{rng, sim::make_world(n, trial * 7919, size), 1 + rng() % 40, {}, {}, 0, 0, 0, 0, 0};
    run.trained.assign(n, 0);
    run.pending.assign(static_cast<size_t>(size), {});
    INFO("trial " << trial << ": " << n << " samples, batch " << run.batch);
    for (uint64_t e = 0; e < 3; ++e) run.epoch(e);
    total_failures += run.failures;
    total_resizes += run.resizes;
    total_retrained += run.retrained;
  }
  // The runs must actually have exercised rollbacks and resizes.
  CHECK(total_failures > 50);
  CHECK(total_resizes > 50);
  CHECK(total_retrained > 0);
}

TEST_CASE(
    "a failure between set_epoch and the first commit of the new epoch rolls back the epoch") {
  std::mt19937_64 rng(99);
  Run run{rng, sim::make_world(777, 1, 3), 16, std::vector<int>(777), {}, 0, 0, 0, 0, 0};
  run.pending.assign(3, {});
  while (!run.train_pass()) {
  }
  run.commit();
  for (int r = 0; r < 3; ++r) run.world[r].set_epoch(1);
  for (int r = 0; r < 3; ++r) run.world[r].record(*run.world[r].batches(16).begin());
  run.world.restore();
  run.world.resize_and_sync(2);
  CHECK(run.world[0].epoch() == 0);
  CHECK(run.world[1].epoch() == 0);
  CHECK(run.world[0].unprocessed() == 0);
}
