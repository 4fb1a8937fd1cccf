// RoundWatch (elastic/round_watch.h) against a real rendezvous server: it fires when the launcher
// abandons the round, and the request it leaves waiting ends when the launcher answers it.
#include <poll.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "core/config.h"
#include "elastic/round_watch.h"
#include "rendezvous/elastic_protocol.h"
#include "rendezvous/server.h"

using namespace cohort;
using cohort::elastic::detail::RoundWatch;
using namespace std::chrono_literals;

namespace {

const std::string kSecret(32, 'w');

Config launcher_at(int port) {
  Config c;
  c.rendezvous_addr = "127.0.0.1";
  c.rendezvous_port = port;
  c.secret = kSecret;
  c.worker_id = "4";
  return c;
}

}  // namespace

TEST_CASE("a round watch fires with the launcher's reason when the round is abandoned") {
  rendezvous::RendezvousServer server("127.0.0.1", kSecret);
  RoundWatch watch(launcher_at(server.port()), 3);
  REQUIRE(server.await_waiting_gets(1, 10s));
  CHECK_FALSE(watch.abandoned().cancelled());
  server.set(rendezvous::abandon_key(3), "worker 1 was killed by signal 9 (SIGKILL)",
             rendezvous::kElasticScope);
  pollfd fd{watch.abandoned().fd(), POLLIN, 0};
  REQUIRE(::poll(&fd, 1, 10'000) == 1);
  CHECK(watch.abandoned().reason() ==
        "round 3 was abandoned by the launcher while it formed: worker 1 was killed by signal 9 "
        "(SIGKILL)");
}

TEST_CASE(
    "a round watch ends at once when the round is joined, and the server forgets its request") {
  rendezvous::RendezvousServer server("127.0.0.1", kSecret);
  {
    RoundWatch watch(launcher_at(server.port()), 5);
    REQUIRE(server.await_waiting_gets(1, 10s));
  }  // joined: the watcher hangs up at once
  // The server's event loop sees the hang-up and drops the parked request with its connection
  // (rendezvous/server_loop.h), rather than holding it until the key is set.
  CHECK(server.await_authenticated_at_most(0, 10s));
  // What cohortrun does when it plans the next round: answers nobody, and breaks nothing.
  server.set(rendezvous::abandon_key(5), "superseded by round 6", rendezvous::kElasticScope);
  CHECK(server.authenticated() == 0);
}
