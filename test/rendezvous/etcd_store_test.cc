// What only the etcd store must do, against a real etcd (test/rendezvous/etcd_server.h): refuse
// values that this job did not write for their key, from clients that do not hold the secret, and
// fail clearly when etcd cannot be reached.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "base/log.h"
#include "rendezvous/etcd_lease.h"
#include "rendezvous/etcd_store.h"
#include "rendezvous/protocol.h"
#include "rendezvous/signed_value.h"
#include "test/common/captured_stderr.h"
#include "test/common/scratch_dir.h"
#include "test/rendezvous/etcd_server.h"

using namespace cohort;
using namespace cohort::rendezvous;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

using cohort::testing::CapturedStderr;

const std::string kSecret(32, 'j');

std::string prefix_for(const std::string& test) {
  return "/cohort-test/" + std::to_string(::getpid()) + "/" + test + "/";
}

EtcdStore store_at(const std::string& prefix, const std::string& secret = kSecret) {
  return EtcdStore({.etcd = {.endpoints = {testing::etcd_server().endpoint()}, .timeout = 5s},
                    .prefix = prefix,
                    .secret = secret});
}

// What a client of etcd without the job secret can do: put any bytes under any key.
void put_raw(const std::string& key, const std::string& value) {
  EtcdClient raw({.endpoints = {testing::etcd_server().endpoint()}});
  raw.call("/v3/kv/put", {{"key", base64(key)}, {"value", base64(value)}});
}

}  // namespace

TEST_CASE("etcd: a value written without the job secret is refused and logged") {
  // Every refusal logged, whatever this process logged before; the default again afterwards, for
  // the tests that count lines when the whole binary runs in one process.
  log::set_repeat_window(0ms);
  struct RestoreWindow {
    ~RestoreWindow() { log::set_repeat_window(10s); }
  } restore;
  std::string prefix = prefix_for("forged");
  EtcdStore store = store_at(prefix);
  CapturedStderr captured;

  SECTION("a forged value") {
    put_raw(prefix + "assign/1/0", "round=9 rank=0 size=1");
  }
  SECTION("a value sealed with another secret") {
    put_raw(prefix + "assign/1/0",
            seal_value(std::string(32, 'x'), prefix + "assign/1/0", "round=9 rank=0 size=1"));
  }
  SECTION("a genuine value replayed under another key") {
    store.set("assign/2/0", "round=9 rank=0 size=1");
    EtcdClient raw({.endpoints = {testing::etcd_server().endpoint()}});
    auto kvs = raw.call("/v3/kv/range", {{"key", base64(prefix + "assign/2/0")}})["kvs"];
    put_raw(prefix + "assign/1/0", unbase64(kvs[0]["value"].get<std::string>()));
  }
  CHECK_FALSE(store.lookup("assign/1/0").has_value());
  CHECK_THROWS_AS(store.get("assign/1/0", 100ms), RendezvousTimeout);
  // The genuine value, written after, is what a waiting get returns.
  store.set("assign/1/0", "round=3 rank=0 size=1");
  CHECK(store.get("assign/1/0", 1s) == "round=3 rank=0 size=1");
  CHECK_THAT(captured.text(), Contains("refused etcd at") && Contains("assign/1/0"));
}

TEST_CASE("etcd: a forged value does not win a compare-and-set for its writer") {
  std::string prefix = prefix_for("forged-cas");
  EtcdStore store = store_at(prefix);
  put_raw(prefix + "planner/1", "agent-x");
  CHECK_FALSE(store.lookup("planner/1").has_value());
  // Refused, so as good as unset: "unset" matches, and the job's value replaces the forged one
  // (left there, it would block the key for good).
  CHECK(store.compare_and_set("planner/1", std::nullopt, "agent-a"));
  CHECK(store.lookup("planner/1") == "agent-a");
  CHECK_FALSE(store.compare_and_set("planner/1", std::nullopt, "agent-b"));
}

TEST_CASE("etcd: create replaces a refused value, create_new does not, held tells them apart") {
  std::string prefix = prefix_for("refused-create");
  EtcdStore store = store_at(prefix);
  EtcdOptions etcd{.endpoints = {testing::etcd_server().endpoint()}, .timeout = 5s};
  store.remove("rounds/1");  // each section runs the case again from here
  CHECK(store.held("rounds/1").state == EtcdStore::Held::State::kUnset);
  SECTION("garbage") {
    put_raw(prefix + "rounds/1", "any bytes");
  }
  SECTION("a value sealed for another key") {
    put_raw(prefix + "rounds/1", seal_value(kSecret, prefix + "rounds/0", "generation=0"));
  }
  auto held = store.held("rounds/1");
  CHECK(held.state == EtcdStore::Held::State::kRefused);
  CHECK_FALSE(store.create_new("rounds/1", "generation=1"));
  {
    EtcdLease lease(etcd, 5s, {});
    CHECK(store.create("rounds/1", "generation=1", lease.id()));
    CHECK(store.create("rounds/1", "generation=1", lease.id()));  // idempotent
    CHECK_FALSE(store.create("rounds/1", "generation=2", 0));     // a genuine value stays
    held = store.held("rounds/1");
    CHECK(held.state == EtcdStore::Held::State::kSealed);
    CHECK(held.value == "generation=1");
  }  // revoked: the replacement was put under the lease
  CHECK_FALSE(store.lookup("rounds/1").has_value());
  CHECK(store.create_new("rounds/1", "generation=3"));
  CHECK(store.create_new("rounds/1", "generation=3"));  // idempotent too
}

TEST_CASE("etcd: an unreachable etcd fails within the timeout naming every endpoint") {
  testing::ClosedPort closed;
  std::string endpoint = closed.endpoint();
  EtcdStore store({.etcd = {.endpoints = {endpoint}, .timeout = 2s},
                   .prefix = "/cohort-test/unreachable/",
                   .secret = kSecret});
  auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(store.set("k", "v"), Contains(endpoint) && Contains("no endpoint answered"));
  CHECK(std::chrono::steady_clock::now() - start < 3s);
}

TEST_CASE("etcd: a second endpoint answers when the first is down") {
  testing::ClosedPort closed;
  std::string down = closed.endpoint();
  EtcdStore store({.etcd = {.endpoints = {down, testing::etcd_server().endpoint()}, .timeout = 5s},
                   .prefix = prefix_for("failover"),
                   .secret = kSecret});
  store.set("k", "v");
  CHECK(store.lookup("k") == "v");
}

TEST_CASE("etcd: bad endpoints are refused before anything is sent") {
  CHECK_THROWS_AS(EtcdClient({.endpoints = {}}), InvalidArgument);
  CHECK_THROWS_WITH(EtcdClient({.endpoints = {"127.0.0.1:2379"}}),
                    Contains("'127.0.0.1:2379' is not an http:// or https:// URL"));
}

TEST_CASE("etcd: an endpoint is scheme://host[:port] with a port from 1 to 65535") {
  for (const char* good : {"http://127.0.0.1:2379", "https://etcd-0.etcd:2379", "http://etcd",
                           "https://etcd.example.com:1", "http://e:65535"}) {
    INFO(good);
    CHECK(parse_etcd_endpoints(good) == std::vector<std::string>{good});
  }
  CHECK(parse_etcd_endpoints("http://a:1,https://b:2") ==
        std::vector<std::string>{"http://a:1", "https://b:2"});
  struct Row {
    const char* list;
    const char* message;
  };
  const Row bad[] = {
      {"http://127.0.0.1:99999",
       "etcd endpoint 'http://127.0.0.1:99999': port '99999' is not a whole number from 1 to "
       "65535"},
      {"http://e:0", "etcd endpoint 'http://e:0': port '0' is not a whole number from 1 to 65535"},
      {"http://e:02379",
       "etcd endpoint 'http://e:02379': port '02379' is not a whole number from "
       "1 to 65535 (write 2379, without leading zeros)"},
      {"http://e:", "etcd endpoint 'http://e:': port '' is not a whole number from 1 to 65535"},
      {"http://e:http", "etcd endpoint 'http://e:http': port 'http'"},
      {"http://:2379", "etcd endpoint 'http://:2379' names no host"},
      {"http://", "etcd endpoint 'http://' names no host"},
      {"ftp://e:2379", "etcd endpoint 'ftp://e:2379' is not an http:// or https:// URL"},
      {"HTTP://e:2379", "etcd endpoint 'HTTP://e:2379' is not an http:// or https:// URL"},
      {"http://[::1]:2379",
       "etcd endpoint 'http://[::1]:2379' has an IPv6 address, which Cohort "
       "does not support: give a host name or an IPv4 address"},
      {"http://::1:2379", "etcd endpoint 'http://::1:2379': '::1' is not a host name"},
      {"http://e:2379/",
       "etcd endpoint 'http://e:2379/' has more than a host and a port ('/'): "
       "give scheme://host:port"},
      {"http://e:2379/v3", "has more than a host and a port ('/v3')"},
      {"http://e:2379?x=1", "has more than a host and a port ('?x=1')"},
      {"http://u:p@e:2379", "has more than a host and a port ('@e:2379')"},
      {"http://e tcd:2379", "'e tcd' is not a host name or an IPv4 address"},
      {"http://-e:2379", "'-e' is not a host name"},
      {"http://a:1,", "etcd endpoint '' is not an http:// or https:// URL"},
  };
  for (const auto& row : bad) {
    INFO(row.list);
    CHECK_THROWS_WITH(parse_etcd_endpoints(row.list), Contains(row.message));
  }
}

TEST_CASE("etcd: TLS files that are not regular files of at most 4 MiB are refused at once") {
  cohort::testing::ScratchDir dir("etcd_tls");
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  { std::ofstream(dir / "big"); }
  std::filesystem::resize_file(dir / "big", (4 << 20) + 1);
  cohort::testing::write_text(dir / "ca.pem", "-----BEGIN CERTIFICATE-----\n");
  const std::string https = "https://127.0.0.1:1";  // nothing is sent: refused before
  auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(EtcdClient({.endpoints = {https}, .ca_file = dir / "fifo"}),
                    "etcd: etcd CA file '" + (dir / "fifo") +
                        "' is a FIFO; Cohort reads it only from a regular file of at most 4 MiB");
  CHECK_THROWS_WITH(EtcdClient({.endpoints = {https}, .cert_file = "/dev/zero"}),
                    Contains("etcd certificate file '/dev/zero' is a character device"));
  CHECK_THROWS_WITH(EtcdClient({.endpoints = {https}, .key_file = dir / "big"}),
                    Contains("etcd key file '" + (dir / "big") +
                             "' holds 4194305 bytes, more than the 4 MiB Cohort reads of it"));
  CHECK_THROWS_WITH(EtcdClient({.endpoints = {https}, .key_file = dir / "absent"}),
                    Contains("cannot read etcd key file '" + (dir / "absent") + "'"));
  CHECK_THROWS_AS(EtcdClient({.endpoints = {https}, .key_file = dir / "absent"}), InvalidArgument);
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  CHECK_NOTHROW(EtcdClient({.endpoints = {https}, .ca_file = dir / "ca.pem"}));
}

TEST_CASE("etcd: base64 round trip") {
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    CHECK(unbase64(base64(s)) == s);
  }
  CHECK_THROWS_AS(unbase64("abc"), InvalidArgument);
}

TEST_CASE("etcd: a listing holds this job's values under the prefix, in key order") {
  std::string prefix = prefix_for("list");
  EtcdStore store = store_at(prefix);
  store.set("agents/b", "2");
  store.set("agents/a", "1");
  store.set("agentsx", "not under agents/");
  put_raw(prefix + "agents/c", "forged");
  auto listing = store.list("agents/");
  CHECK(listing.values == std::map<std::string, std::string>{{"agents/a", "1"}, {"agents/b", "2"}});
  CHECK(listing.revision > 0);
}

TEST_CASE("etcd: a wait for change ends at a change after the revision, and only then") {
  std::string prefix = prefix_for("watch");
  EtcdStore store = store_at(prefix);
  store.set("agents/a", "1");
  auto listing = store.list("agents/");
  CHECK_FALSE(store.wait_for_change("agents/", listing.revision, 200ms));
  store.set("other", "x");  // not under the prefix
  CHECK_FALSE(store.wait_for_change("agents/", listing.revision, 200ms));
  store.remove("agents/a");
  CHECK(store.wait_for_change("agents/", listing.revision, 5s));
}

TEST_CASE("etcd: keys under a lease go with it, and a claim is won once") {
  std::string prefix = prefix_for("lease");
  EtcdStore store = store_at(prefix);
  EtcdOptions etcd{.endpoints = {testing::etcd_server().endpoint()}, .timeout = 5s};
  auto revision = store.list("").revision;
  {
    EtcdLease lease(etcd, 2s, {});
    store.set_leased("agents/a", "slots=2", lease.id());
    CHECK(store.create("planner/1", "a", lease.id()));
    CHECK(store.create("planner/1", "a", lease.id()));  // the same claim again: still won
    CHECK_FALSE(store.create("planner/1", "b", lease.id()));
    CHECK(store.lookup("agents/a") == "slots=2");
  }  // revoked
  CHECK(store.list("").values.empty());
  CHECK(store.wait_for_change("", revision, 1s));
}

TEST_CASE("etcd: a write under a lease etcd does not know is no outage") {
  std::string prefix = prefix_for("unknown-lease");
  EtcdStore store = store_at(prefix);
  EtcdOptions etcd{.endpoints = {testing::etcd_server().endpoint()}, .timeout = 5s};
  int64_t id = 0;
  {
    EtcdLease lease(etcd, 2s, {});
    id = lease.id();
    CHECK(lease.alive());
    EtcdClient(etcd).call("/v3/lease/revoke", {{"ID", std::to_string(id)}});
    CHECK_FALSE(lease.alive());  // asked, etcd says it is gone
  }
  CHECK_THROWS_AS(store.set_leased("agents/a", "slots=1", id), EtcdLeaseNotFound);
  CHECK_THROWS_WITH(store.create("planners/1", "a", id), Contains("HTTP 404"));
}

TEST_CASE("etcd: a lease revoked by someone else is reported lost") {
  EtcdOptions etcd{.endpoints = {testing::etcd_server().endpoint()}, .timeout = 5s};
  std::promise<std::string> lost;
  EtcdLease lease(etcd, 3s, [&](const std::string& why) { lost.set_value(why); });
  EtcdClient(etcd).call("/v3/lease/revoke", {{"ID", std::to_string(lease.id())}});
  auto reason = lost.get_future();
  // Renewals come every second: the first after the revocation reports it.
  REQUIRE(reason.wait_for(10s) == std::future_status::ready);
  CHECK_THAT(reason.get(), Contains("expired"));
  CHECK(lease.lost());
}
