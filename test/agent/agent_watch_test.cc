// An agent's etcd watch waits out only an etcd that cannot be reached; an error etcd answers
// stops the watch and reaches the agent (throw_if_failed), which stops its job with that message
// instead of waiting --elastic-timeout for an etcd that is there; watches that etcd did not create
// are asked for again, instead of waiting for the agent's next full read.
#include <poll.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "agent/agent_ranges.h"
#include "agent/agent_records.h"
#include "agent/agent_watch.h"
#include "launcher/wakeup.h"
#include "test/agent/watch_dropping_proxy.h"
#include "test/rendezvous/etcd_server.h"
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

TEST_CASE("agent watch: the watches etcd did not create are asked for again") {
  std::string endpoint = testing::etcd_server().endpoint();
  testing::WatchDroppingProxy proxy(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)), 1);
  std::string prefix = "/cohort-test/" + std::to_string(::getpid()) + "/watch-uncreated/";
  rendezvous::EtcdStore writer(
      {.etcd = {.endpoints = {endpoint}, .timeout = 5s}, .prefix = prefix, .secret = kSecret});
  Wakeup wake;
  AgentWatch watch({.etcd = {.endpoints = {proxy.endpoint()}, .timeout = 5s},
                    .prefix = prefix,
                    .secret = kSecret},
                   wake);
  KeyRanges ranges = follower_ranges("b");  // the rounds' range comes last: etcd loses it
  watch.watch_after(writer.list(ranges).revision, ranges);
  writer.set(round_key(0), "generation=0\nb.0.0 b 0");
  // Seen once the watch was asked for again: without that, never (this test makes no full read).
  // The bound leaves room for etcd itself losing the retried watch too under CI's load (the next
  // retries wait 4 s, then 8 s).
  bool seen = false;
  auto deadline = std::chrono::steady_clock::now() + 7 * kCreatedWithin + 10s;
  while (!seen && std::chrono::steady_clock::now() < deadline) {
    woken_within(wake, 100);
    wake.drain();
    for (const auto& change : watch.take().changes) seen = seen || change.key == round_key(0);
  }
  CHECK(proxy.dropped() == 1);
  CHECK(seen);
}
