// An etcd client's interrupt descriptor (EtcdOptions::interrupt_fd, which an agent's stop signal
// makes readable) ends its requests at once, whatever etcd does: refuses connections, or accepts
// them and never answers; a request made while it is readable is not sent at all. A lease's grant,
// alive() and revocation end the same way, its renewals on its own thread never do.
#include <poll.h>
#include <sys/eventfd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "base/fd.h"
#include "base/framed_socket.h"
#include "cohort/errors.h"
#include "rendezvous/etcd_client.h"
#include "rendezvous/etcd_lease.h"
#include "rendezvous/etcd_store.h"
#include "test/rendezvous/etcd_server.h"

using namespace cohort;
using namespace cohort::rendezvous;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using Clock = std::chrono::steady_clock;

namespace {

// An eventfd: readable once fire() wrote to it, for good.
class Interrupt {
 public:
  Interrupt() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) { REQUIRE(fd_.valid()); }
  int fd() const { return fd_.get(); }
  Clock::time_point fire() {
    uint64_t one = 1;
    REQUIRE(::write(fd_.get(), &one, sizeof one) == sizeof one);
    return Clock::now();
  }

 private:
  Fd fd_;
};

EtcdOptions options(const std::string& endpoint, const Interrupt& interrupt) {
  return {.endpoints = {endpoint}, .timeout = 10s, .interrupt_fd = interrupt.fd()};
}

// A listener that takes connections into its backlog and never accepts nor answers one, as an
// etcd behind a link that holds every byte.
struct HoldingServer {
  int port = 0;
  Fd listener = net::listen_tcp("127.0.0.1", port);
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port); }
  // Until a connection waits in the backlog (a client's request is held), at most 10 s.
  bool wait_for_connection() const {
    pollfd p{listener.get(), POLLIN, 0};
    return ::poll(&p, 1, 10000) == 1;
  }
};

template <typename Call>
std::chrono::milliseconds interrupted_within(Clock::time_point from, Call call) {
  CHECK_THROWS_AS(call(), EtcdInterrupted);
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - from);
}

}  // namespace

TEST_CASE("etcd interrupt: a request made while the descriptor is readable ends at once") {
  testing::ClosedPort closed;
  Interrupt interrupt;
  EtcdClient client(options(closed.endpoint(), interrupt));
  auto fired = interrupt.fire();
  CHECK_THROWS_WITH(client.call("/v3/kv/range", {{"key", "aw=="}}),
                    Contains("/v3/kv/range: interrupted, unanswered"));
  CHECK(interrupted_within(fired, [&] { client.call("/v3/kv/range", {{"key", "aw=="}}); }) < 100ms);
}

TEST_CASE("etcd interrupt: a request to an etcd that refuses connections ends on the descriptor") {
  testing::ClosedPort closed;
  Interrupt interrupt;
  EtcdStore store({.etcd = options(closed.endpoint(), interrupt),
                   .prefix = "/cohort-test/interrupt/",
                   .secret = std::string(32, 'i')});
  // Fired while the store retries the closed port (or before it tries: either way at once).
  Clock::time_point fired;
  std::thread firing([&] { fired = interrupt.fire(); });
  auto start = Clock::now();
  CHECK_THROWS_AS(store.lookup("k"), EtcdInterrupted);
  firing.join();
  CHECK(Clock::now() - std::max(fired, start) < 500ms);
}

TEST_CASE("etcd interrupt: a request that etcd holds ends within moments of the descriptor") {
  HoldingServer held;
  Interrupt interrupt;
  EtcdStore store({.etcd = options(held.endpoint(), interrupt),
                   .prefix = "/cohort-test/interrupt/",
                   .secret = std::string(32, 'i')});
  Clock::time_point fired;
  std::thread firing([&] {
    REQUIRE(held.wait_for_connection());  // the request is out, and held
    fired = interrupt.fire();
  });
  auto start = Clock::now();
  CHECK_THROWS_AS(store.set("k", "v"), EtcdInterrupted);
  auto took = Clock::now() - start;
  firing.join();
  CHECK(Clock::now() - fired < 500ms);
  CHECK(took < 5s);  // not the request's 10 s deadline
}

TEST_CASE("etcd interrupt: a lease grant that etcd holds ends on the descriptor") {
  HoldingServer held;
  Interrupt interrupt;
  Clock::time_point fired;
  std::thread firing([&] {
    REQUIRE(held.wait_for_connection());
    fired = interrupt.fire();
  });
  CHECK_THROWS_AS(EtcdLease(options(held.endpoint(), interrupt), 2s, nullptr), EtcdInterrupted);
  firing.join();
  CHECK(Clock::now() - fired < 500ms);
}

// What etcd says is left of `lease`'s TTL (-1: it no longer knows the lease).
int64_t ttl_left(const EtcdClient& client, int64_t lease) {
  auto answer = client.call("/v3/lease/timetolive", {{"ID", std::to_string(lease)}});
  return answer.contains("TTL") ? json_integer(answer, "TTL") : 0;
}

TEST_CASE("etcd interrupt: a lease's renewals go on while alive() and the revocation end") {
  auto& etcd = testing::etcd_server();
  Interrupt interrupt;
  EtcdClient observer({.endpoints = {etcd.endpoint()}});
  int64_t id = 0;
  {
    // etcd says whole seconds left, rounded down: a renewal every 2 s shows as 4 going up to 5.
    EtcdLease lease(options(etcd.endpoint(), interrupt), 6s, nullptr);
    id = lease.id();
    interrupt.fire();
    CHECK_THROWS_AS(lease.alive(), EtcdInterrupted);
    // Renewed on its own thread after the interrupt: etcd's TTL left goes up again, at the latest
    // a third of the TTL on, while the lease is never lost.
    int64_t last = ttl_left(observer, id);
    bool renewed = false;
    for (auto give_up = Clock::now() + 10s; !renewed && Clock::now() < give_up;) {
      int64_t now = ttl_left(observer, id);
      renewed = now > last;
      last = now;
      std::this_thread::sleep_for(100ms);  // a bounded wait for the renewal, not an ordering
    }
    CHECK(renewed);
    CHECK_FALSE(lease.lost());
  }  // the revocation: interrupted, so the lease is left to expire
  CHECK(ttl_left(observer, id) > 0);
}
