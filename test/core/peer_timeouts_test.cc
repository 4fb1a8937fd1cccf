// The rule between COHORT_TIMEOUT_SECONDS and COHORT_PEER_TIMEOUT_SECONDS
// (base/peer_timeouts.h), shared by the runtime's Config and cohortrun: its four cases.
#include "base/peer_timeouts.h"

#include <catch2/catch.hpp>

#include "cohort/errors.h"

using cohort::env::fit_peer_timeouts;
using cohort::env::PeerTimeouts;
using namespace std::chrono_literals;

TEST_CASE("neither timeout set: the defaults fit and nothing is said") {
  PeerTimeouts t;
  CHECK(fit_peer_timeouts(t) == std::nullopt);
  CHECK(t.timeout == 30s);
  CHECK(t.peer == 5s);
}

TEST_CASE("only COHORT_TIMEOUT_SECONDS set, not longer than the default peer timeout") {
  PeerTimeouts t{.timeout = 5s, .timeout_set = true};
  auto warning = fit_peer_timeouts(t);
  REQUIRE(warning);
  CHECK(
      *warning ==
      "COHORT_TIMEOUT_SECONDS 5 s is not longer than the default COHORT_PEER_TIMEOUT_SECONDS 5 s: "
      "COHORT_PEER_TIMEOUT_SECONDS lowered to 2.5 s, half of COHORT_TIMEOUT_SECONDS");
  CHECK(t.timeout == 5s);
  CHECK(t.peer == 2500ms);
  // Longer than the peer timeout: left alone.
  PeerTimeouts fine{.timeout = 6s, .timeout_set = true};
  CHECK(fit_peer_timeouts(fine) == std::nullopt);
  CHECK(fine.peer == 5s);
}

TEST_CASE("only COHORT_PEER_TIMEOUT_SECONDS set, not shorter than the default timeout") {
  PeerTimeouts t{.peer = 40s, .peer_set = true};
  auto warning = fit_peer_timeouts(t);
  REQUIRE(warning);
  CHECK(*warning ==
        "COHORT_TIMEOUT_SECONDS 30 s is not longer than COHORT_PEER_TIMEOUT_SECONDS 40 s (the "
        "default timeout): COHORT_TIMEOUT_SECONDS raised to 80 s, twice "
        "COHORT_PEER_TIMEOUT_SECONDS");
  CHECK(t.timeout == 80s);
  CHECK(t.peer == 40s);
  // A peer timeout in microseconds still leaves a timeout longer than it.
  PeerTimeouts odd{.timeout = 1ms, .peer = 700us, .peer_set = true};
  CHECK(fit_peer_timeouts(odd) == std::nullopt);
  PeerTimeouts tiny{.timeout = 1ms, .peer = 1000us, .peer_set = true};
  REQUIRE(fit_peer_timeouts(tiny));
  CHECK(tiny.timeout == 2ms);
}

TEST_CASE("both set and inconsistent: refused naming both") {
  PeerTimeouts t{.timeout = 5s, .peer = 5s, .timeout_set = true, .peer_set = true};
  CHECK_THROWS_AS(fit_peer_timeouts(t), cohort::InvalidArgument);
  CHECK_THROWS_WITH(fit_peer_timeouts(t),
                    Catch::Matchers::StartsWith("COHORT_TIMEOUT_SECONDS 5 s is not longer than "
                                                "COHORT_PEER_TIMEOUT_SECONDS 5 s: a collective "
                                                "would time out before the heartbeat"));
  CHECK(t.timeout == 5s);  // unchanged
  PeerTimeouts fine{.timeout = 5s, .peer = 1s, .timeout_set = true, .peer_set = true};
  CHECK(fit_peer_timeouts(fine) == std::nullopt);
}
