// The rendezvous server and client over real loopback sockets, including hostile peers.
#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/net.h"
#include "rendezvous/client.h"
#include "rendezvous/frame_io.h"
#include "rendezvous/hmac.h"
#include "rendezvous/server.h"
#include "test/common/captured_stderr.h"
#include "test/rendezvous/raw_requests.h"

using namespace cohort;
using namespace cohort::rendezvous;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

using cohort::rendezvous::testing::allow_descriptors;
using cohort::testing::CapturedStderr;

const std::string kSecret(32, 's');

// Sends raw bytes on a fresh connection; returns the reply frame, or "" once the server hangs up.
std::string send_bytes(int port, const std::string& bytes) {
  Fd fd = net::connect_tcp("127.0.0.1", port, Clock::now() + 2s);
  REQUIRE(::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(bytes.size()));
  try {
    return net::read_frame(fd.get(), kMaxRendezvousFrame, Clock::now() + 5s);
  } catch (const net::ConnectionClosed&) {
    return "";
  } catch (const Error& e) {
    // Closing with unread bytes (the payload after a rejected header) resets the connection.
    if (std::string(e.what()).find("reset by peer") == std::string::npos) throw;
    return "";
  }
}

std::string framed(const std::string& payload) {
  uint32_t len = htonl(static_cast<uint32_t>(payload.size()));
  return std::string(reinterpret_cast<const char*>(&len), sizeof len) + payload;
}

// A request frame as a client sends it: a header signed with `secret`, then the payload.
std::string signed_frame(const std::string& payload, const std::string& secret = kSecret,
                         int64_t timestamp_ms = unix_millis()) {
  return signed_header(secret, static_cast<uint32_t>(payload.size()), timestamp_ms,
                       random_bytes(16)) +
         payload;
}

// An open connection from `source` (an address of this host, e.g. 127.0.0.2) to the server.
Fd connect_from(const std::string& source, int port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in from = net::resolve_ipv4(source, 0);
  REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&from), sizeof from) == 0);
  sockaddr_in to = net::resolve_ipv4("127.0.0.1", port);
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
  return fd;
}

// A field of /proc/self/status in kB, e.g. "VmHWM" (the peak resident set size).
long status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  FAIL("no " << field << " in /proc/self/status");
  return 0;
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
  RendezvousServer server("127.0.0.1", kSecret, {.frame_timeout = 200ms, .auth_timeout = 200ms});
  int port = server.port();
  int rejected = 0;
  auto expect_rejected = [&](const std::string& bytes) {
    CHECK(send_bytes(port, bytes).empty());
    CHECK(server.rejected() == ++rejected);
  };
  const std::string wrong_key(32, 'x');

  SECTION("signed with the wrong key: the header, or the request inside a good header") {
    expect_rejected(signed_frame(seal_request(wrong_key, set_request("forged")), wrong_key));
    expect_rejected(signed_frame(seal_request(wrong_key, set_request("forged"))));
    CHECK_FALSE(server.contains("forged"));
  }
  SECTION("unsigned garbage, too short for a MAC, an empty frame, an unsigned frame") {
    expect_rejected(signed_frame("definitely not a request, nor signed by anyone at all"));
    expect_rejected(signed_frame("short"));
    expect_rejected(signed_frame(""));
    expect_rejected(std::string(kSignedHeaderSize, 'g'));
    expect_rejected(framed(seal_request(kSecret, set_request("unsigned"))));  // the old format
    CHECK_FALSE(server.contains("unsigned"));
  }
  SECTION("a correctly signed body with trailing garbage is malformed") {
    RendezvousRequest r = set_request("trailing");
    std::string sealed = seal_request(kSecret, r);
    std::string body = sealed.substr(0, sealed.size() - kMacSize) + "junk";
    expect_rejected(signed_frame(body + hmac_sha256(kSecret, body)));
    CHECK_FALSE(server.contains("trailing"));
  }
  SECTION("a frame cut short, a frame too large, and connections that never finish a header") {
    std::string whole = signed_frame(seal_request(kSecret, set_request("cut")));
    expect_rejected(whole.substr(0, whole.size() - 5));
    expect_rejected(signed_header(kSecret, 0x7fffffff, unix_millis(), random_bytes(16)));
    expect_rejected("");
    expect_rejected(whole.substr(0, kSignedHeaderSize - 1));
    CHECK_FALSE(server.contains("cut"));
  }
  SECTION("a request replayed byte for byte") {
    std::string frame = signed_frame(seal_request(kSecret, set_request("once")));
    CHECK_FALSE(send_bytes(port, frame).empty());
    REQUIRE(server.contains("once"));
    RendezvousClient("127.0.0.1", port, kSecret, 5s).set("once", "changed");
    expect_rejected(frame);
    CHECK(RendezvousClient("127.0.0.1", port, kSecret, 5s).get("once", 0ms) == "changed");
  }
  SECTION("a captured header replayed in front of a fresh request") {
    std::string frame = signed_frame(seal_request(kSecret, set_request("first")));
    CHECK_FALSE(send_bytes(port, frame).empty());
    std::string fresh = seal_request(kSecret, set_request("second"));
    std::string header = frame.substr(0, kSignedHeaderSize);
    expect_rejected(header + fresh);
    CHECK_FALSE(server.contains("second"));
  }
  SECTION("correctly signed requests and headers from the past and from the future") {
    RendezvousRequest old = set_request("stale");
    old.timestamp_ms -= 61'000;
    expect_rejected(signed_frame(seal_request(kSecret, old)));
    RendezvousRequest future = set_request("stale");
    future.timestamp_ms += 61'000;
    expect_rejected(signed_frame(seal_request(kSecret, future)));
    CHECK_FALSE(server.contains("stale"));
  }
  SECTION("a signed first header from the past or the future is told why, signed, and refused") {
    std::string good = seal_request(kSecret, set_request("stale"));
    for (int64_t skew : {int64_t{-61'000}, int64_t{75'000}}) {
      std::string header = signed_header(kSecret, static_cast<uint32_t>(good.size()),
                                         unix_millis() + skew, std::string(16, 'n'));
      RendezvousResponse answer = open_response(kSecret, send_bytes(port, header + good));
      CHECK(server.rejected() == ++rejected);
      CHECK(answer.status == RendezvousStatus::kStale);
      CHECK(answer.nonce == std::string(16, 'n'));  // the header's: the client knows it is its own
      CHECK_THAT(answer.value, Contains(skew < 0 ? "61 s behind" : "75 s ahead of"));
      CHECK_THAT(answer.value, Contains("the clock of cohortrun's host"));
    }
    CHECK(open_response(kSecret, send_bytes(port, signed_frame(good, kSecret, INT64_MIN))).status ==
          RendezvousStatus::kStale);
    CHECK(server.rejected() == ++rejected);
    CHECK_FALSE(server.contains("stale"));
  }
}

TEST_CASE("a client whose clock is off is refused at once, told by how much") {
  RendezvousServer server("127.0.0.1", kSecret);
  RendezvousClient skewed("127.0.0.1", server.port(), kSecret, 20s, "", std::chrono::seconds(-90));
  auto start = Clock::now();
  CHECK_THROWS_AS(skewed.set("k", "v"), ClockSkewRefused);
  CHECK_THROWS_WITH(skewed.set("k", "v"), Contains("90 s behind the clock of cohortrun's host") &&
                                              Contains("set them right (NTP)"));
  CHECK(Clock::now() - start < 5s);  // not retried until the timeout
  CHECK_FALSE(server.contains("k"));
  RendezvousClient("127.0.0.1", server.port(), kSecret, 5s, "", std::chrono::seconds(50))
      .set("k", "v");
  CHECK(server.contains("k"));  // within the window
}

TEST_CASE("a flood of idle connections does not lock out a worker and is logged briefly") {
  allow_descriptors(4096);
  RendezvousServer server("127.0.0.1", kSecret);  // the defaults cohortrun uses
  CapturedStderr captured;
  std::vector<Fd> flood;
  for (int i = 0; i < 1100; ++i)
    flood.push_back(net::connect_tcp("127.0.0.1", server.port(), Clock::now() + 5s));
  // Everything above the lobby's limit was dropped, oldest first, each rejection counted.
  REQUIRE(server.await_rejected(1100 - 64, 10s));
  CHECK(server.unauthenticated() <= 64);
  auto start = Clock::now();
  RendezvousClient worker("127.0.0.1", server.port(), kSecret, 2s);
  worker.set("checkin", "start");
  CHECK(worker.get("checkin", 0ms) == "start");
  CHECK(Clock::now() - start < 2s);
  // A thousand rejections, one line (the rest counted into the next line of the kind).
  int rejected_lines = 0;
  for (const auto& line : captured.lines())
    rejected_lines += line.find("rejected") != std::string::npos;
  CHECK(rejected_lines <= 2);
}

TEST_CASE("a worker gets through while another address keeps flooding the port") {
  allow_descriptors(8192);
  RendezvousServer server("127.0.0.1", kSecret, {.auth_timeout = 60s});
  std::atomic<bool> done{false};
  std::atomic<int> opened{0};
  std::thread attacker([&] {
    std::vector<Fd> held;
    while (!done && held.size() < 4000) {
      held.push_back(connect_from("127.0.0.2", server.port()));
      ++opened;
    }
  });
  for (int i = 0; i < 20; ++i) {
    RendezvousClient worker("127.0.0.1", server.port(), kSecret, 2s);  // a fresh connection each
    worker.set("k" + std::to_string(i), "v");
  }
  done = true;
  attacker.join();
  CHECK(opened > 0);
  // The attacker's address never held more than its share of the lobby.
  CHECK(server.unauthenticated() <= 16);
}

TEST_CASE("connections announcing large frames make the server allocate nothing") {
  allow_descriptors(4096);
  RendezvousServer server("127.0.0.1", kSecret);
  long peak_before = status_kb("VmHWM");
  // Each announces a 1 MiB frame (the largest allowed) in the old format's length prefix and in
  // a header that is not signed, then waits: the server must not hold a megabyte for either.
  const int n = 300;
  std::vector<Fd> held;
  for (int i = 0; i < n; ++i) {
    Fd fd = net::connect_tcp("127.0.0.1", server.port(), Clock::now() + 5s);
    std::string bytes = std::string("\x00\x10\x00\x00", 4) + std::string(kSignedHeaderSize, 'x');
    REQUIRE(::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
    held.push_back(std::move(fd));
  }
  REQUIRE(server.await_rejected(n, 10s));
  long grown_mb = (status_kb("VmHWM") - peak_before) / 1024;
  INFO("the peak resident set grew by " << grown_mb << " MiB");
  CHECK(grown_mb < 32);  // the old server held n MiB here
  CHECK(server.authenticated() == 0);
}

TEST_CASE("a client rejects a response that is forged or answers another request") {
  int port = 0;
  Fd listener = net::listen_tcp("127.0.0.1", port);
  auto impostor = [&](std::string key, bool echo_nonce) {
    Fd conn(::accept(listener.get(), nullptr, nullptr));
    auto deadline = Clock::now() + 5s;
    SignedHeader header = open_signed_header(
        kSecret, net::read_bytes(conn.get(), kSignedHeaderSize, deadline), kMaxRendezvousFrame);
    RendezvousRequest request =
        open_request(kSecret, net::read_bytes(conn.get(), header.length, deadline));
    RendezvousResponse lie{.nonce = echo_nonce ? request.nonce : random_bytes(kNonceSize),
                           .value = "evil"};
    net::write_frame(conn.get(), seal_response(key, lie), Clock::now() + 5s);
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
  { Fd closed = net::listen_tcp("127.0.0.1", port); }  // a port with nobody listening
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
