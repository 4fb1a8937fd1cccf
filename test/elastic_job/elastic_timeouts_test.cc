// The launcher's and the workers' timeouts fit together (elastic_job/elastic_timeouts.h), by
// default and as checked when cohortrun starts.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "cohort/errors.h"
#include "core/config.h"
#include "elastic_job/elastic_job.h"
#include "elastic_job/elastic_timeouts.h"

using namespace cohort;
using namespace cohort::discovery;
using namespace std::chrono_literals;

TEST_CASE("the default timeouts of cohortrun and of its workers are consistent") {
  ElasticJobOptions launcher;
  Config worker;
  ElasticTimeouts defaults{.checkin = launcher.checkin_timeout,
                           .elastic = launcher.hosts.elastic_timeout,
                           .worker_timeout = worker.timeout,
                           .worker_peer_timeout = worker.peer_timeout,
                           .worker_elastic = worker.elastic_timeout};
  CHECK(check_elastic_timeouts(defaults) == std::nullopt);
  // The struct's own defaults are the same figures, so nobody can change one side alone.
  ElasticTimeouts mirrored;
  CHECK(mirrored.checkin == defaults.checkin);
  CHECK(mirrored.elastic == defaults.elastic);
  CHECK(mirrored.worker_timeout == defaults.worker_timeout);
  CHECK(mirrored.worker_peer_timeout == defaults.worker_peer_timeout);
  CHECK(mirrored.worker_elastic == defaults.worker_elastic);
}

TEST_CASE("inconsistent timeouts are refused naming both settings") {
  ElasticTimeouts t;
  t.checkin = 7s;  // less than 1.5 x the 5 s peer timeout
  CHECK_THAT(*check_elastic_timeouts(t),
             Catch::Matchers::StartsWith(
                 "--checkin-timeout 7 s is less than 1.5 x COHORT_PEER_TIMEOUT_SECONDS 5 s"));
  t = {};
  t.worker_timeout = 5s;
  CHECK_THAT(*check_elastic_timeouts(t),
             Catch::Matchers::StartsWith(
                 "COHORT_TIMEOUT_SECONDS 5 s is not longer than COHORT_PEER_TIMEOUT_SECONDS 5 s"));
  t = {};
  t.worker_elastic = 60s;
  CHECK_THAT(*check_elastic_timeouts(t),
             Catch::Matchers::StartsWith(
                 "COHORT_ELASTIC_TIMEOUT_SECONDS 60 s is shorter than --elastic-timeout 600 s"));
}

TEST_CASE("the workers' timeouts are read from the environment they inherit") {
  ::setenv("COHORT_PEER_TIMEOUT_SECONDS", "0.25", 1);
  ::setenv("COHORT_TIMEOUT_SECONDS", "12", 1);
  ElasticTimeouts t = with_worker_environment({});
  CHECK(t.worker_peer_timeout == 250ms);
  CHECK(t.worker_timeout == 12s);
  ::setenv("COHORT_TIMEOUT_SECONDS", "nan", 1);
  CHECK_THROWS_WITH(with_worker_environment({}),
                    Catch::Matchers::StartsWith("COHORT_TIMEOUT_SECONDS='nan'"));
  ::unsetenv("COHORT_PEER_TIMEOUT_SECONDS");
  ::unsetenv("COHORT_TIMEOUT_SECONDS");
}

TEST_CASE("the launcher refuses and holds the workers' timeouts as the workers do") {
  // Held in whole milliseconds: shorter is refused (as core/config_test.cc shows for workers).
  ::setenv("COHORT_TIMEOUT_SECONDS", "0.0005", 1);
  CHECK_THROWS_WITH(with_worker_environment({}),
                    "COHORT_TIMEOUT_SECONDS='0.0005' is invalid: shorter than 0.001 seconds, the "
                    "shortest time it can hold");
  ::setenv("COHORT_TIMEOUT_SECONDS", "1e8", 1);
  CHECK_THROWS_WITH(with_worker_environment({}),
                    "COHORT_TIMEOUT_SECONDS='1e8' is invalid: longer than 1e+07 seconds");
  ::unsetenv("COHORT_TIMEOUT_SECONDS");
  // The peer timeout is held in whole microseconds.
  ::setenv("COHORT_PEER_TIMEOUT_SECONDS", "1e-6", 1);
  CHECK(with_worker_environment({}).worker_peer_timeout == 1us);
  ::unsetenv("COHORT_PEER_TIMEOUT_SECONDS");
  ::setenv("COHORT_ELASTIC_TIMEOUT_SECONDS", "0", 1);
  CHECK_THROWS_WITH(with_worker_environment({}),
                    "COHORT_ELASTIC_TIMEOUT_SECONDS='0' is invalid: expected a positive number of "
                    "seconds");
  ::unsetenv("COHORT_ELASTIC_TIMEOUT_SECONDS");
}

TEST_CASE("cohortrun fits the timeout the user did not set, and refuses both set inconsistently") {
  ::setenv("COHORT_TIMEOUT_SECONDS", "5", 1);
  std::optional<std::string> fitted;
  ElasticTimeouts t = with_worker_environment({}, &fitted);
  CHECK(t.worker_timeout == 5s);
  CHECK(t.worker_peer_timeout == 2500ms);
  REQUIRE(fitted);
  CHECK_THAT(*fitted, Catch::Matchers::Contains("COHORT_PEER_TIMEOUT_SECONDS lowered to 2.5 s"));
  CHECK(check_elastic_timeouts(t) == std::nullopt);
  CHECK_NOTHROW(check_job_timeouts({}));
  ::setenv("COHORT_PEER_TIMEOUT_SECONDS", "5", 1);
  CHECK_THROWS_WITH(check_job_timeouts({}),
                    Catch::Matchers::StartsWith("COHORT_TIMEOUT_SECONDS 5 s is not longer than "
                                                "COHORT_PEER_TIMEOUT_SECONDS 5 s"));
  ::unsetenv("COHORT_TIMEOUT_SECONDS");
  ::unsetenv("COHORT_PEER_TIMEOUT_SECONDS");
}
