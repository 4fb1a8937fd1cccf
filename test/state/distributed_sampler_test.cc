#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "cohort/elastic/distributed_sampler.h"
#include "cohort/errors.h"

using cohort::elastic::DistributedSampler;
using cohort::elastic::DistributedSamplerOptions;

TEST_CASE("padding gives every rank the same count and covers every sample") {
  for (uint64_t n : {1, 7, 100, 1001}) {
    for (int w : {1, 2, 3, 4, 7}) {
      std::map<uint64_t, int> seen;
      uint64_t steps = 0;
      for (int r = 0; r < w; ++r) {
        DistributedSampler s(n, r, w, {.seed = 3});
        s.set_epoch(2);
        REQUIRE(s.num_samples() == (n + static_cast<uint64_t>(w) - 1) / static_cast<uint64_t>(w));
        if (r == 0) steps = s.steps(8);
        REQUIRE(s.steps(8) == steps);
        uint64_t yielded = 0, batches = 0;
        for (const auto& b : s.batches(8)) {
          ++batches;
          yielded += b.size();
          for (uint64_t i : b) ++seen[i];
        }
        REQUIRE(batches == steps);
        REQUIRE(yielded == s.num_samples());
      }
      REQUIRE(seen.size() == n);  // every sample at least once; the padding repeats a few
      uint64_t total = 0;
      for (auto [sample, count] : seen) total += static_cast<uint64_t>(count);
      REQUIRE(total == DistributedSampler(n, 0, w).total_size());
    }
  }
}

TEST_CASE("drop_last gives every rank floor(n / world) distinct samples") {
  const uint64_t n = 1001;
  const int w = 4;
  std::set<uint64_t> seen;
  for (int r = 0; r < w; ++r) {
    DistributedSampler s(n, r, w, {.drop_last = true});
    REQUIRE(s.num_samples() == 250);
    for (uint64_t i : s.indices()) REQUIRE(seen.insert(i).second);
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("shuffle follows seed and epoch, no shuffle is rank-strided order") {
  DistributedSampler a(100, 1, 3, {.seed = 5}), b(100, 1, 3, {.seed = 5});
  CHECK(a.indices() == b.indices());
  b.set_epoch(1);
  CHECK(a.indices() != b.indices());
  DistributedSampler plain(10, 1, 3, {.shuffle = false});
  CHECK(plain.indices() == std::vector<uint64_t>{1, 4, 7, 0});  // 10 pads with sample 0
}

TEST_CASE("distributed sampler rejects bad worlds and empty shares") {
  CHECK_THROWS_AS(DistributedSampler(10, 3, 3), cohort::InvalidArgument);
  CHECK_THROWS_AS(DistributedSampler(2, 0, 3, {.drop_last = true}), cohort::InvalidArgument);
  CHECK_THROWS_AS(DistributedSampler(10, 0, 3).steps(0), cohort::InvalidArgument);
  CHECK_THROWS_AS(DistributedSampler(10, 0, 3).at(4), cohort::InvalidArgument);
}
