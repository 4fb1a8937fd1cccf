// The rendezvous server and client over real loopback sockets, including hostile peers.
#include <arpa/inet.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <mutex>
#include <thread>
#include <vector>

#include "discovery/frame_io.h"
#include "discovery/hmac.h"
#include "discovery/rendezvous_client.h"
#include "discovery/rendezvous_server.h"

using namespace cohort;
using namespace cohort::discovery;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

const std::string kSecret(32, 's');

// Sends raw bytes on a fresh connection; returns the reply frame, or "" once the server hangs up.
std::string send_bytes(int port, const std::string& bytes) {
  Fd fd = connect_tcp("127.0.0.1", port, Clock::now() + 2s);
  REQUIRE(::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(bytes.size()));
  try {
    return read_frame(fd.get(), kMaxRendezvousFrame, Clock::now() + 5s);
  } catch (const ConnectionClosed&) {
    return "";
  }
}

std::string framed(const std::string& payload) {
  uint32_t len = htonl(static_cast<uint32_t>(payload.size()));
  return std::string(reinterpret_cast<const char*>(&len), sizeof len) + payload;
}

RendezvousRequest set_request(const std::string& key) {
  return {.op = RendezvousOp::kSet,
          .nonce = random_bytes(kNonceSize),
          .timestamp_ms = unix_millis(),
          .key = key,
          .value = "v"};
}

}  // namespace

TEST_CASE("a value set by one client is read by another") {
  RendezvousServer server("127.0.0.1", kSecret);
  RendezvousClient a("127.0.0.1", server.port(), kSecret, 5s);
  RendezvousClient b("127.0.0.1", server.port(), kSecret, 5s);
  a.set("k", "hello");
  a.set("empty", "");
  CHECK(b.get("k", 1s) == "hello");
  CHECK(b.get("empty", 1s).empty());
  a.set("k", std::string("bin\0ary", 7));
  CHECK(b.get("k", 0ms) == std::string("bin\0ary", 7));
}

TEST_CASE("a get waits on the server until another client sets the key") {
  RendezvousServer server("127.0.0.1", kSecret);
  RendezvousClient a("127.0.0.1", server.port(), kSecret, 5s);
  std::string got;
  std::thread reader([&] {
    RendezvousClient b("127.0.0.1", server.port(), kSecret, 5s);
    got = b.get("late", 20s);
  });
  REQUIRE(server.await_waiting_gets(1, 10s));  // the get is parked on the server now
  CHECK_FALSE(server.contains("late"));
  a.set("late", "world");
  reader.join();
  CHECK(got == "world");
}

TEST_CASE("a get past its deadline fails naming the server and the key") {
  RendezvousServer server("127.0.0.1", kSecret);
  RendezvousClient client("127.0.0.1", server.port(), kSecret, 5s);
  std::string where = "rendezvous server 127.0.0.1:" + std::to_string(server.port());
  CHECK_THROWS_AS(client.get("never", 50ms), RendezvousTimeout);
  CHECK_THROWS_WITH(client.get("never", 50ms),
                    Contains(where) && Contains("key 'never' was not set within 50 ms"));
  // The connection is still usable after a timeout.
  client.set("after", "x");
  CHECK(client.get("after", 0ms) == "x");
}

TEST_CASE("the server caps how long a get may wait") {
  RendezvousServer server("127.0.0.1", kSecret, {.max_get_wait = 50ms});
  RendezvousClient client("127.0.0.1", server.port(), kSecret, 5s);
  CHECK_THROWS_WITH(client.get("never", 60s), Contains("within 50 ms (the server's limit)"));
}

TEST_CASE("forged and garbage and replayed and stale requests are rejected and change nothing") {
  RendezvousServer server("127.0.0.1", kSecret, {.frame_timeout = 200ms});
  int port = server.port();
  int rejected = 0;
  auto expect_rejected = [&](const std::string& bytes) {
    CHECK(send_bytes(port, bytes).empty());
    CHECK(server.rejected() == ++rejected);
  };

  SECTION("signed with the wrong key") {
    expect_rejected(framed(seal_request(std::string(32, 'x'), set_request("forged"))));
    CHECK_FALSE(server.contains("forged"));
  }
  SECTION("unsigned garbage, too short for a MAC, and an empty frame") {
    expect_rejected(framed("definitely not a request, nor signed by anyone at all"));
    expect_rejected(framed("short"));
    expect_rejected(framed(""));
  }
  SECTION("a correctly signed body with trailing garbage is malformed") {
    RendezvousRequest r = set_request("trailing");
    std::string sealed = seal_request(kSecret, r);
    std::string body = sealed.substr(0, sealed.size() - kMacSize) + "junk";
    expect_rejected(framed(body + hmac_sha256(kSecret, body)));
    CHECK_FALSE(server.contains("trailing"));
  }
  SECTION("a frame cut short, a frame too large, and a connection that never speaks") {
    std::string whole = framed(seal_request(kSecret, set_request("cut")));
    expect_rejected(whole.substr(0, whole.size() - 5));
    expect_rejected(framed("").replace(0, 4, "\x7f\xff\xff\xff", 4));
    expect_rejected("");
    CHECK_FALSE(server.contains("cut"));
  }
  SECTION("a request replayed byte for byte") {
    std::string frame = framed(seal_request(kSecret, set_request("once")));
    CHECK_FALSE(send_bytes(port, frame).empty());
    REQUIRE(server.contains("once"));
    RendezvousClient("127.0.0.1", port, kSecret, 5s).set("once", "changed");
    expect_rejected(frame);
    CHECK(RendezvousClient("127.0.0.1", port, kSecret, 5s).get("once", 0ms) == "changed");
  }
  SECTION("correctly signed requests from the past and from the future") {
    RendezvousRequest old = set_request("stale");
    old.timestamp_ms -= 61'000;
    expect_rejected(framed(seal_request(kSecret, old)));
    RendezvousRequest future = set_request("stale");
    future.timestamp_ms += 61'000;
    expect_rejected(framed(seal_request(kSecret, future)));
    CHECK_FALSE(server.contains("stale"));
  }
}

TEST_CASE("a client rejects a response that is forged or answers another request") {
  int port = 0;
  Fd listener = listen_tcp("127.0.0.1", port);
  auto impostor = [&](std::string key, bool echo_nonce) {
    Fd conn(::accept(listener.get(), nullptr, nullptr));
    RendezvousRequest request =
        open_request(kSecret, read_frame(conn.get(), kMaxRendezvousFrame, Clock::now() + 5s));
    RendezvousResponse lie{.nonce = echo_nonce ? request.nonce : random_bytes(kNonceSize),
                           .value = "evil"};
    write_frame(conn.get(), seal_response(key, lie), Clock::now() + 5s);
  };
  RendezvousClient client("127.0.0.1", port, kSecret, 5s);
  std::thread wrong_key(impostor, std::string(32, 'x'), true);
  CHECK_THROWS_WITH(client.get("k", 1s), Contains("unauthentic response") && Contains("wrong MAC"));
  wrong_key.join();
  std::thread replayed(impostor, kSecret, false);
  CHECK_THROWS_WITH(client.get("k", 1s), Contains("nonce differs"));
  replayed.join();
}

TEST_CASE("scopes keep keys apart and a scope can be cleared") {
  RendezvousServer server("127.0.0.1", kSecret);
  RendezvousClient round1("127.0.0.1", server.port(), kSecret, 5s, "round1");
  RendezvousClient round2("127.0.0.1", server.port(), kSecret, 5s, "round2");
  round1.set("addr", "one");
  round2.set("addr", "two");
  CHECK(round1.get("addr", 0ms) == "one");
  CHECK(round2.get("addr", 0ms) == "two");
  server.clear_scope("round1");
  CHECK_FALSE(server.contains("addr", "round1"));
  CHECK_THROWS_AS(round1.get("addr", 0ms), RendezvousTimeout);
  CHECK(round2.get("addr", 0ms) == "two");
}

TEST_CASE("stop wakes a waiting get and later requests fail clearly") {
  RendezvousServer server("127.0.0.1", kSecret);
  std::string error;
  std::thread reader([&] {
    RendezvousClient client("127.0.0.1", server.port(), kSecret, 5s);
    try {
      client.get("never", 60s);
    } catch (const Error& e) {
      error = e.what();
    }
  });
  REQUIRE(server.await_waiting_gets(1, 10s));
  server.stop();
  reader.join();
  CHECK_THAT(error, Contains("stopping"));
  RendezvousClient late("127.0.0.1", server.port(), kSecret, 200ms);
  CHECK_THROWS_WITH(late.set("k", "v"), Contains("rendezvous server 127.0.0.1:"));
}

TEST_CASE("a client that cannot reach the server names it") {
  int port = 0;
  { Fd closed = listen_tcp("127.0.0.1", port); }  // a port with nobody listening
  RendezvousClient client("127.0.0.1", port, kSecret, 100ms);
  CHECK_THROWS_WITH(client.set("k", "v"),
                    Contains("rendezvous server 127.0.0.1:" + std::to_string(port)) &&
                        Contains("cannot connect"));
}

TEST_CASE("the set observer sees each client set after it is stored and may call the server") {
  std::mutex mutex;
  std::vector<std::string> seen;
  RendezvousServer* self = nullptr;
  RendezvousServerOptions options;
  options.on_set = [&](const std::string& scope, const std::string& key) {
    // Called outside the server's lock: reading the value back must not deadlock.
    auto value = self->lookup(key, scope);
    std::lock_guard lock(mutex);
    seen.push_back(scope + "|" + key + "=" + value.value_or("(missing)"));
  };
  RendezvousServer server("127.0.0.1", kSecret, options);
  self = &server;
  RendezvousClient scoped("127.0.0.1", server.port(), kSecret, 5s, "elastic");
  RendezvousClient plain("127.0.0.1", server.port(), kSecret, 5s);
  scoped.set("checkin/0/0", "start");
  plain.set("k", "v");
  CHECK(plain.get("k", 0ms) == "v");            // a GET is not reported
  server.set("assign/0/0", "exit", "elastic");  // nor is the launcher's own set
  std::lock_guard lock(mutex);
  CHECK(seen == std::vector<std::string>{"elastic|checkin/0/0=start", "|k=v"});
}

TEST_CASE("the launcher's own set wakes a waiting get and lookup never waits") {
  RendezvousServer server("127.0.0.1", kSecret);
  CHECK_FALSE(server.lookup("assign/1/0", "elastic").has_value());
  RendezvousClient client("127.0.0.1", server.port(), kSecret, 5s, "elastic");
  std::string got;
  std::thread waiter([&] { got = client.get("assign/1/0", 5s); });
  REQUIRE(server.await_waiting_gets(1, 5s));
  server.set("assign/1/0", "round=0 rank=0", "elastic");
  waiter.join();
  CHECK(got == "round=0 rank=0");
  CHECK(server.lookup("assign/1/0", "elastic") == std::optional<std::string>("round=0 rank=0"));
  CHECK_FALSE(server.lookup("assign/1/0").has_value());  // another scope
}
