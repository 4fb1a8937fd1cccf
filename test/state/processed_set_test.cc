#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "state/processed_set.h"

using cohort::elastic::detail::ProcessedSet;

TEST_CASE("processed set counts, selects and finds clear positions") {
  ProcessedSet s(200);
  for (uint64_t p : {0, 1, 63, 64, 65, 130, 199}) s.set(p);
  CHECK(s.count() == 7);
  CHECK(s.zeros(0, 200) == 193);
  CHECK(s.zeros(60, 70) == 7);
  CHECK(s.zeros(199, 200) == 0);
  CHECK(s.next_zero(0, 200) == 2);
  CHECK(s.next_zero(63, 200) == 66);
  CHECK(s.next_zero(199, 200) == 200);
  std::vector<uint64_t> ranks = {0, 60, 61, 192, 193};
  CHECK(s.select_zeros(ranks) == std::vector<uint64_t>{2, 62, 66, 198, 200});
}

TEST_CASE("processed set rolls back exactly the changes since the last commit") {
  std::mt19937_64 rng(3);
  ProcessedSet s(10'000);
  std::set<uint64_t> committed;
  for (int round = 0; round < 50; ++round) {
    std::set<uint64_t> added;
    int count = static_cast<int>(rng() % 300);
    for (int i = 0; i < count; ++i) {
      uint64_t p = rng() % 10'000;  // any order, so the undo log grows both ways
      if (s.test(p)) continue;
      s.set(p);
      added.insert(p);
    }
    REQUIRE(s.uncommitted() == added.size());
    for (uint64_t p : added) REQUIRE(s.is_uncommitted(p));
    ProcessedSet::Delta d = s.delta();
    uint64_t bits = 0;
    for (size_t i = 0; i < d.words.size(); ++i) {
      for (int b = 0; b < 64; ++b) {
        if ((d.words[i] >> b) & 1) {
          REQUIRE(added.count((d.first_word + i) * 64 + static_cast<uint64_t>(b)) == 1);
          ++bits;
        }
      }
    }
    REQUIRE(bits == added.size());
    if (round % 3 == 0) {
      s.rollback();
    } else {
      s.mark_committed();
      committed.insert(added.begin(), added.end());
    }
    REQUIRE(s.count() == committed.size());
    for (uint64_t p : committed) REQUIRE(s.test(p));
    REQUIRE(s.uncommitted() == 0);
  }
}

TEST_CASE("processed set fill and clear keep bits past the end clear") {
  ProcessedSet s(70);
  s.fill_all();
  CHECK(s.count() == 70);
  CHECK(s.full());
  CHECK(s.words()[1] == (uint64_t{1} << 6) - 1);
  s.clear_all();
  CHECK(s.count() == 0);
}
