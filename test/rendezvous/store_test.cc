// The Store interface's contract, checked on each of its implementations: a client of a real
// server over loopback (what workers use), the server's in-process store (what the launcher
// uses), and a real etcd (test/rendezvous/etcd_server.h) through EtcdStore.
#include <catch2/catch.hpp>
#include <memory>
#include <thread>

#include "rendezvous/client.h"
#include "rendezvous/etcd_store.h"
#include "rendezvous/server.h"
#include "test/rendezvous/etcd_server.h"

using namespace cohort;
using namespace cohort::rendezvous;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

const std::string kSecret(32, 's');

enum class Kind { kClient, kServer, kEtcd };

// Keeps the sections' keys apart in the one etcd of the test binary.
std::string fresh_prefix() {
  static int n = 0;
  return "/cohort-test/" + std::to_string(::getpid()) + "/" + std::to_string(++n) + "/";
}

// A server, a store over it of the kind under test, and a second view of the same scope.
struct Stores {
  RendezvousServer server{"127.0.0.1", kSecret};
  std::unique_ptr<Store> store;
  std::unique_ptr<Store> other;

  explicit Stores(Kind kind) {
    std::string prefix = fresh_prefix();
    auto make = [&]() -> std::unique_ptr<Store> {
      switch (kind) {
        case Kind::kServer:
          return server.store("scope");
        case Kind::kClient:
          return std::make_unique<RendezvousClient>("127.0.0.1", server.port(), kSecret, 5s,
                                                    "scope");
        case Kind::kEtcd:
          return std::make_unique<EtcdStore>(EtcdStoreOptions{
              .etcd = {.endpoints = {testing::etcd_server().endpoint()}, .timeout = 5s},
              .prefix = prefix,
              .secret = kSecret});
      }
      return nullptr;
    };
    store = make();
    other = make();
  }
};

}  // namespace

TEST_CASE("the Store contract on the client, the server's own store and etcd") {
  Kind kind = GENERATE(Kind::kClient, Kind::kServer, Kind::kEtcd);
  bool remote = kind == Kind::kClient;  // the server counts the waiting gets of clients only
  CAPTURE(static_cast<int>(kind));
  Stores s(kind);
  Store& store = *s.store;

  SECTION("set, lookup, get") {
    CHECK_FALSE(store.lookup("k").has_value());
    store.set("k", "v1");
    CHECK(s.other->lookup("k") == "v1");
    CHECK(store.get("k", 0ms) == "v1");
    if (kind != Kind::kEtcd) {
      CHECK(s.server.lookup("k", "scope") == "v1");
      CHECK_FALSE(s.server.lookup("k").has_value());  // another scope
    }
  }

  SECTION("get waits for a set from elsewhere, and times out naming the key") {
    std::thread setter([&] {
      REQUIRE((!remote || s.server.await_waiting_gets(1, 5s)));
      s.other->set("late", "here");
    });
    CHECK(store.get("late", 5s) == "here");
    setter.join();
    CHECK_THROWS_AS(store.get("never", 50ms), RendezvousTimeout);
    CHECK_THROWS_WITH(store.get("never", 50ms), Contains("'never'"));
  }

  SECTION("compare-and-set: only one of two contenders wins, and a repeat is idempotent") {
    CHECK(store.compare_and_set("leader", std::nullopt, "a"));
    CHECK_FALSE(s.other->compare_and_set("leader", std::nullopt, "b"));
    CHECK(store.lookup("leader") == "a");
    CHECK(store.compare_and_set("leader", std::nullopt, "a"));  // a's retry: still a
    CHECK_FALSE(store.compare_and_set("leader", "x", "c"));
    CHECK(store.compare_and_set("leader", "a", "c"));
    CHECK(s.other->lookup("leader") == "c");
  }

  SECTION("remove") {
    CHECK_FALSE(store.remove("k"));
    store.set("k", "v");
    CHECK(s.other->remove("k"));
    CHECK_FALSE(store.lookup("k").has_value());
    CHECK(store.compare_and_set("k", std::nullopt, "again"));
  }

  SECTION("wait for several keys within one deadline") {
    store.set("a", "1");
    s.other->set("b", "2");
    CHECK_NOTHROW(store.wait({"a", "b"}, 1s));
    CHECK_THROWS_AS(store.wait({"a", "c"}, 50ms), RendezvousTimeout);
  }

  // In process, the cancellation may come before the get waits or during it: both end it.
  SECTION("a cancellation ends a get at once with its reason") {
    Cancellation cancel;
    std::thread canceller([&] {
      REQUIRE((!remote || s.server.await_waiting_gets(1, 5s)));
      cancel.cancel("round 3 abandoned");
    });
    CHECK_THROWS_WITH(store.get("never", 10s, &cancel), Contains("round 3 abandoned"));
    canceller.join();
  }

  SECTION("describe names the store") {
    if (kind == Kind::kEtcd) {
      CHECK_THAT(store.describe(), Contains(testing::etcd_server().endpoint()));
    } else {
      CHECK_THAT(store.describe(), Contains(std::to_string(s.server.port())));
    }
  }
}
