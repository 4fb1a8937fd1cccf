// The heartbeat's deadline bookkeeping (core/silence_watch.h): the watched ranks in the order they
// were last heard from, the next deadline at the front, with a simulated clock.
#include <catch2/catch.hpp>

#include "core/silence_watch.h"

using namespace cohort;
using namespace std::chrono_literals;

namespace {

using Clock = SilenceWatch::Clock;

std::vector<int> order(const SilenceWatch& watch) {
  std::vector<int> ranks;
  watch.for_each([&](int rank) { ranks.push_back(rank); });
  return ranks;
}

}  // namespace

TEST_CASE("the rank silent longest is at the front, and a beat sends its rank to the back") {
  auto t0 = Clock::time_point{} + 1h;
  SilenceWatch watch(5, {1, 2, 3, 4}, t0);
  REQUIRE(watch.size() == 4);
  auto first = watch.oldest();
  REQUIRE(first);
  CHECK(first->rank == 1);
  CHECK(first->last_heard == t0);
  CHECK_FALSE(first->heard);
  watch.heard(1, t0 + 10ms);
  watch.heard(3, t0 + 20ms);
  CHECK(order(watch) == std::vector<int>{2, 4, 1, 3});
  CHECK(watch.oldest()->rank == 2);
  watch.heard(2, t0 + 30ms);
  watch.heard(4, t0 + 40ms);
  // Now rank 1 is the one silent longest: its deadline is the next one.
  auto next = watch.oldest();
  CHECK(next->rank == 1);
  CHECK(next->last_heard == t0 + 10ms);
  CHECK(next->heard);
  CHECK(order(watch) == std::vector<int>{1, 3, 2, 4});
}

TEST_CASE("a rank that said goodbye is no longer watched, and strangers change nothing") {
  auto t0 = Clock::time_point{} + 1h;
  SilenceWatch watch(4, {1, 2, 3}, t0);
  watch.forget(1);
  CHECK_FALSE(watch.watches(1));
  CHECK(watch.size() == 2);
  CHECK(watch.oldest()->rank == 2);
  watch.heard(1, t0 + 1ms);  // a late beat from the rank that left
  watch.heard(0, t0 + 1ms);  // never watched
  watch.heard(9, t0 + 1ms);  // outside the job
  watch.forget(-1);
  CHECK(order(watch) == std::vector<int>{2, 3});
  watch.forget(2);
  watch.forget(3);
  CHECK(watch.size() == 0);
  CHECK_FALSE(watch.oldest());
  CHECK(order(watch).empty());
}

TEST_CASE("a beat heard at an earlier time than the last keeps the order of the deadlines") {
  auto t0 = Clock::time_point{} + 1h;
  SilenceWatch watch(3, {1, 2}, t0);
  watch.heard(2, t0 + 50ms);
  watch.heard(1, t0 + 40ms);  // read before rank 2's, handled after it
  CHECK(order(watch) == std::vector<int>{2, 1});
  CHECK(watch.oldest()->last_heard == t0 + 50ms);
}

TEST_CASE("any other rank watches rank 0 alone") {
  auto t0 = Clock::time_point{} + 1h;
  SilenceWatch watch(8, {0}, t0);
  CHECK(watch.watches(0));
  CHECK_FALSE(watch.watches(1));
  watch.heard(0, t0 + 5ms);
  CHECK(watch.oldest()->rank == 0);
  CHECK(watch.oldest()->heard);
}

TEST_CASE("among 4096 watched ranks beating in turn, the front is always the next deadline") {
  auto t0 = Clock::time_point{} + 1h;
  std::vector<int> ranks;
  for (int r = 1; r < 4096; ++r) ranks.push_back(r);
  SilenceWatch watch(4096, ranks, t0);
  // Every rank beats once in a scrambled order, then rank 17 falls silent while the rest beat.
  auto t = t0;
  for (int i = 0; i < 4095; ++i) watch.heard(1 + (i * 2003) % 4095, t += 1us);
  for (int r = 1; r < 4096; ++r) {
    if (r != 17) watch.heard(r, t += 1us);
  }
  CHECK(watch.oldest()->rank == 17);
  auto seen = order(watch);
  REQUIRE(seen.size() == 4095);
  CHECK(seen.front() == 17);
  CHECK(seen.back() == 4095);
}
