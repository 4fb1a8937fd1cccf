#include <catch2/catch.hpp>

#include <vector>

#include "cohort/errors.h"
#include "state/permutation.h"

using cohort::elastic::detail::Permutation;

TEST_CASE("permutation is a bijection with an exact inverse for every small size") {
  for (uint64_t n = 1; n <= 700; ++n) {
    Permutation p(n, 42, n % 5);
    std::vector<bool> seen(n);
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t s = p.at(i);
      REQUIRE(s < n);
      REQUIRE_FALSE(seen[s]);
      seen[s] = true;
      REQUIRE(p.position_of(s) == i);
    }
  }
}

TEST_CASE("permutation of a large dataset inverts and stays in range") {
  const uint64_t n = 10'000'019;
  Permutation p(n, 7, 3);
  for (uint64_t i = 0; i < n; i += 9973) {
    uint64_t s = p.at(i);
    REQUIRE(s < n);
    REQUIRE(p.position_of(s) == i);
  }
}

TEST_CASE("permutation depends on seed and epoch and nothing else") {
  const uint64_t n = 1000;
  auto order = [&](uint64_t seed, uint64_t epoch) {
    Permutation p(n, seed, epoch);
    std::vector<uint64_t> out;
    for (uint64_t i = 0; i < n; ++i) out.push_back(p.at(i));
    return out;
  };
  CHECK(order(1, 0) == order(1, 0));
  CHECK(order(1, 0) != order(1, 1));
  CHECK(order(1, 0) != order(2, 0));
  // Recorded values: the order must never change between builds, releases or hosts, or a job
  // resumed from a checkpoint would train a different order.
  std::vector<uint64_t> head = order(1, 0);
  head.resize(5);
  CHECK(head == std::vector<uint64_t>{440, 928, 240, 204, 478});
  CHECK(Permutation(10'000'000, 42, 7).at(12345) == 9505062);
  CHECK(Permutation(10'000'000, 42, 7).at(9'999'999) == 787916);
  Permutation identity(n, 1, 0, false);
  for (uint64_t i = 0; i < n; ++i) REQUIRE(identity.at(i) == i);
}

TEST_CASE("permutation spreads each sample evenly over positions across epochs") {
  // Sample 0's position over 4000 epochs, in 10 buckets of 100 positions: each bucket should get
  // about 400; a fixed or biased order would concentrate them.
  const uint64_t n = 1000, epochs = 4000;
  std::vector<int> buckets(10);
  for (uint64_t e = 0; e < epochs; ++e) ++buckets[Permutation(n, 5, e).position_of(0) / 100];
  for (int b : buckets) {
    CHECK(b > 300);
    CHECK(b < 500);
  }
}

TEST_CASE("permutation rejects empty and oversized datasets") {
  CHECK_THROWS_AS(Permutation(0, 1, 0), cohort::InvalidArgument);
  CHECK_THROWS_AS(Permutation(Permutation::kMaxSize + 1, 1, 0), cohort::InvalidArgument);
  CHECK_NOTHROW(Permutation(Permutation::kMaxSize, 1, 0).at(12345));
}
