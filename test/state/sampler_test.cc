// The elastic sampler's rules in small, explicit worlds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "cohort/errors.h"
#include "sim_world.h"

using cohort::InvalidArgument;
using cohort::MismatchError;
using cohort::elastic::ElasticSampler;

namespace {

std::vector<uint64_t> drain(ElasticSampler& s, uint64_t batch, bool record = true) {
  std::vector<uint64_t> all;
  for (const auto& b : s.batches(batch)) {
    all.insert(all.end(), b.begin(), b.end());
    if (record) s.record(b);
  }
  return all;
}

}  // namespace

TEST_CASE("a world of one yields every sample once per epoch, shuffled by epoch") {
  ElasticSampler s(1000, 9);
  CHECK(s.steps(64) == 16);
  auto first = drain(s, 64);
  CHECK(first.size() == 1000);
  CHECK(std::set<uint64_t>(first.begin(), first.end()).size() == 1000);
  CHECK(s.remaining() == 0);
  CHECK(s.steps(64) == 16);  // nothing is committed in a bare sampler
  s.set_epoch(1);
  auto second = drain(s, 64);
  CHECK(std::set<uint64_t>(second.begin(), second.end()).size() == 1000);
  CHECK(first != second);
}

TEST_CASE(
    "record rejects foreign, repeated and out-of-range samples and records none of a bad batch") {
  sim::World w = sim::make_world(100, 1, 2);
  auto mine = drain(w[0], 10, false);
  auto theirs = drain(w[1], 10, false);
  REQUIRE(mine.size() == 50);
  CHECK_THROWS_WITH(w[0].record(std::vector<uint64_t>{theirs[0]}),
                    Catch::Contains("rank 1's partition"));
  CHECK_THROWS_WITH(w[0].record(std::vector<uint64_t>{100}),
                    Catch::Contains("outside the dataset"));
  w[0].record(std::vector<uint64_t>{mine[0]});
  CHECK_THROWS_WITH(w[0].record(std::vector<uint64_t>{mine[0]}),
                    Catch::Contains("already recorded since the last commit"));
  // A batch whose third sample is bad records none of it, duplicates inside it included.
  CHECK_THROWS_AS(w[0].record(std::vector<uint64_t>{mine[1], mine[2], theirs[1]}), InvalidArgument);
  CHECK_THROWS_AS(w[0].record(std::vector<uint64_t>{mine[3], mine[3]}), InvalidArgument);
  CHECK(w[0].uncommitted() == 1);
  w.commit();
  CHECK_THROWS_WITH(w[0].record(std::vector<uint64_t>{mine[0]}),
                    Catch::Contains("already processed in epoch 0"));
}

TEST_CASE("commit merges every rank's records so all ranks hold the same committed set") {
  sim::World w = sim::make_world(1000, 2, 3);
  std::vector<uint64_t> recorded;
  for (int r = 0; r < 3; ++r) {
    auto b = *w[r].batches(40).begin();
    w[r].record(b);
    recorded.insert(recorded.end(), b.begin(), b.end());
  }
  for (int r = 0; r < 3; ++r) CHECK_FALSE(w[r].is_committed(recorded[0]));
  w.commit();
  for (int r = 0; r < 3; ++r) {
    CHECK(w[r].unprocessed() == 1000 - 120);
    CHECK(w[r].uncommitted() == 0);
    for (uint64_t s : recorded) REQUIRE(w[r].is_committed(s));
  }
}

TEST_CASE("restore drops uncommitted records and repartitions the remainder evenly") {
  sim::World w = sim::make_world(1001, 3, 4);
  for (int r = 0; r < 4; ++r) w[r].record(*w[r].batches(30).begin());
  w.commit();
  for (int r = 0; r < 4; ++r) w[r].record(*w[r].batches(7 + static_cast<uint64_t>(r)).begin());
  w.restore();
  uint64_t left = w[0].unprocessed();
  CHECK(left == 1001 - 120);
  for (int r = 0; r < 4; ++r) {
    CHECK(w[r].uncommitted() == 0);
    CHECK((w[r].remaining() == left / 4 || w[r].remaining() == left / 4 + 1));
    CHECK(w[r].steps(10) == (left / 4 + 1 + 9) / 10);
  }
}

TEST_CASE(
    "every rank yields the same number of batches, short ranks end with short or empty ones") {
  sim::World w = sim::make_world(10, 4, 4);  // shares 3, 3, 2, 2
  for (int r = 0; r < 4; ++r) {
    std::vector<size_t> sizes;
    for (const auto& b : w[r].batches(2)) sizes.push_back(b.size());
    CHECK(sizes.size() == 2);
    CHECK(sizes[0] == 2);
    CHECK(sizes[1] == (r < 2 ? 1u : 0u));
  }
}

TEST_CASE("commit detects ranks that are out of step and changes nothing") {
  sim::World w = sim::make_world(500, 5, 2);
  w[0].record(*w[0].batches(10).begin());
  w[1].set_epoch(1);
  CHECK_THROWS_AS(w.commit(), MismatchError);
  CHECK(w[0].uncommitted() == 10);
  w[1].set_epoch(0);  // a different epoch again restarts epoch 0 fresh, which is still consistent
  w.commit();
  CHECK(w[1].unprocessed() == 490);
}

TEST_CASE("a stale partition is detected at commit") {
  sim::World w = sim::make_world(500, 5, 2);
  w.ranks.push_back(std::make_unique<ElasticSampler>(500, 5));  // joined without a sync
  CHECK_THROWS_AS(w.commit(), MismatchError);
}

TEST_CASE("set_epoch then restore returns to the committed epoch and its progress") {
  sim::World w = sim::make_world(300, 6, 2);
  for (int r = 0; r < 2; ++r) w[r].record(*w[r].batches(50).begin());
  w.commit();
  for (int r = 0; r < 2; ++r) w[r].record(*w[r].batches(50).begin());  // uncommitted
  for (int r = 0; r < 2; ++r) w[r].set_epoch(1);
  CHECK(w[0].unprocessed() == 300);
  for (int r = 0; r < 2; ++r) w[r].record(*w[r].batches(5).begin());
  w.restore();
  for (int r = 0; r < 2; ++r) {
    CHECK(w[r].epoch() == 0);
    CHECK(w[r].unprocessed() == 200);
  }
  // After a complete epoch nothing is kept for rollback but the epoch number.
  for (int r = 0; r < 2; ++r) drain(w[r], 64);
  w.commit();
  CHECK(w[0].unprocessed() == 0);
  for (int r = 0; r < 2; ++r) w[r].set_epoch(1);
  w.restore();
  CHECK(w[0].epoch() == 0);
  CHECK(w[0].unprocessed() == 0);
  CHECK(w[0].steps(8) == 0);
}

TEST_CASE("set_epoch with the current epoch keeps progress") {
  ElasticSampler s(100, 1);
  s.record(*s.batches(10).begin());
  s.set_epoch(0);
  CHECK(s.remaining() == 90);
}

TEST_CASE("iterating batches after a repartition is refused") {
  ElasticSampler s(100, 1);
  auto range = s.batches(10);
  auto it = range.begin();
  s.set_epoch(2);
  CHECK_THROWS_AS(++it, InvalidArgument);
}

TEST_CASE("sampler constructor and steps reject bad arguments") {
  CHECK_THROWS_AS(ElasticSampler(0, 1), InvalidArgument);
  ElasticSampler s(10, 1);
  CHECK_THROWS_AS(s.steps(0), InvalidArgument);
}
