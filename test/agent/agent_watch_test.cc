// An agent's etcd watch waits out only an etcd that cannot be reached; an error etcd answers
// stops the watch and reaches the agent (throw_if_failed), which stops its job with that message
// instead of waiting --elastic-timeout for an etcd that is there.
#include <poll.h>

#include <catch2/catch.hpp>
#include <string>

#include "agent/agent_ranges.h"
#include "agent/agent_watch.h"
#include "launcher/wakeup.h"
#include "test/rendezvous/refusing_etcd.h"

using namespace cohort;
using namespace cohort::discovery;
using Catch::Matchers::Contains;
using namespace std::chrono_literals;

namespace {

const std::string kSecret(32, 'w');

bool woken_within(const Wakeup& wake, int millis) {
  pollfd fd{wake.fd(), POLLIN, 0};
  return ::poll(&fd, 1, millis) == 1;
}

}  // namespace

TEST_CASE("agent watch: an error etcd answers stops the watch and reaches the agent") {
  testing::RefusingEtcd etcd;
  Wakeup wake;
  AgentWatch watch({.etcd = {.endpoints = {etcd.endpoint()}, .timeout = 2s},
                    .prefix = "/cohort-test/watch-refused/",
                    .secret = kSecret},
                   wake);
  CHECK_NOTHROW(watch.throw_if_failed());
  watch.watch_after(1, planner_ranges());
  REQUIRE(woken_within(wake, 10'000));
  CHECK_THROWS_WITH(watch.throw_if_failed(),
                    Contains("watching the job in etcd failed") && Contains("refused by the test"));
  CHECK(etcd.refused() == 1);  // asked once, not again and again
}
