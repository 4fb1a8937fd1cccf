// A store that cannot be reached throws StoreUnreachable, the one error that code waiting out an
// outage retries; an error the store answers (a refusal, a bad request) is a plain cohort::Error
// that comes at once, never after the outage's timeout and never as StoreUnreachable.
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <string>

#include "cohort/errors.h"
#include "rendezvous/client.h"
#include "rendezvous/etcd_client.h"
#include "rendezvous/etcd_lease.h"
#include "rendezvous/etcd_store.h"
#include "rendezvous/store.h"
#include "test/rendezvous/etcd_server.h"
#include "test/rendezvous/refusing_etcd.h"

using namespace cohort;
using namespace cohort::rendezvous;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

const std::string kSecret(32, 'u');

bool unreachable(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const StoreUnreachable&) {
    return true;
  } catch (...) {
    return false;
  }
}

// What `call` threw, and how long it took to.
template <typename Call>
std::pair<std::exception_ptr, std::chrono::steady_clock::duration> failure_of(Call call) {
  auto start = std::chrono::steady_clock::now();
  try {
    call();
  } catch (...) {
    return {std::current_exception(), std::chrono::steady_clock::now() - start};
  }
  FAIL("no error");
  return {};
}

}  // namespace

TEST_CASE("store errors: etcd at a closed port throws StoreUnreachable naming it") {
  testing::ClosedPort closed;
  EtcdStore store({.etcd = {.endpoints = {closed.endpoint()}, .timeout = 1s},
                   .prefix = "/cohort-test/store-unreachable/",
                   .secret = kSecret});
  CHECK_THROWS_AS(store.set("k", "v"), StoreUnreachable);
  CHECK_THROWS_AS(store.lookup("k"), StoreUnreachable);
  CHECK_THROWS_WITH(store.lookup("k"), Contains(closed.endpoint()));
}

TEST_CASE("store errors: the rendezvous client at a closed port throws StoreUnreachable") {
  testing::ClosedPort closed;
  RendezvousClient client("127.0.0.1", closed.port(), kSecret, 1s, "elastic");
  CHECK_THROWS_AS(client.set("k", "v"), StoreUnreachable);
  CHECK_THROWS_WITH(client.lookup("k"), Contains(std::to_string(closed.port())));
}

TEST_CASE("store errors: an error etcd answers comes at once and is no StoreUnreachable") {
  // A bad request: etcd answers HTTP 400 at once; a client that took it for an outage would try
  // again until its 20 s timeout.
  EtcdClient client({.endpoints = {testing::etcd_server().endpoint()}, .timeout = 20s});
  auto [error, took] = failure_of([&] { client.call("/v3/kv/range", {{"key", 42}}); });
  CHECK_FALSE(unreachable(error));
  CHECK(took < 5s);
  // A lease that etcd does not know: its own error type, no outage either.
  auto [lease_error, lease_took] = failure_of([&] {
    client.call("/v3/lease/revoke", {{"ID", "12345"}});
  });
  CHECK_FALSE(unreachable(lease_error));
  CHECK_THROWS_AS(std::rethrow_exception(lease_error), EtcdLeaseNotFound);
  CHECK(lease_took < 5s);
}

TEST_CASE("store errors: an overloaded or leaderless etcd is waited out as an outage") {
  for (const std::string status : {"429 Too Many Requests", "503 Service Unavailable"}) {
    testing::RefusingEtcd etcd(status);
    EtcdClient client({.endpoints = {etcd.endpoint()}, .timeout = 1s});
    auto [error, took] = failure_of([&] { client.call("/v3/kv/range", {{"key", "aw=="}}); });
    CHECK(unreachable(error));
    CHECK(etcd.refused() > 1);  // asked again until the timeout
    CHECK(took >= 1s);
  }
  CHECK(etcd_outage(0, 8));  // RESOURCE_EXHAUSTED in a watch stream's error
  CHECK_FALSE(etcd_outage(400, 3));
}

TEST_CASE("store errors: a lease renewal that etcd refuses loses the lease at once") {
  // Renewed every third of its 3 s TTL: the first renewal is refused, and the lease is lost then,
  // not renewed again and again as through an outage.
  testing::RefusingEtcd etcd;
  std::promise<std::string> lost;
  EtcdLease lease({.endpoints = {etcd.endpoint()}, .timeout = 2s}, 3s,
                  [&](const std::string& why) { lost.set_value(why); });
  auto why = lost.get_future();
  REQUIRE(why.wait_for(10s) == std::future_status::ready);
  CHECK_THAT(why.get(), Contains("renewing it failed") && Contains("refused by the test"));
  CHECK(lease.lost());
  CHECK(etcd.refused() == 1);
}
