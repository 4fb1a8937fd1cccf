// The rendezvous server's event loop (rendezvous/server_loop.h): thousands of connections on one
// thread, parked GETs, a stalled client that delays nobody, the limits on connections and
// descriptors.
#include <sys/resource.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/framed_socket.h"
#include "rendezvous/client.h"
#include "rendezvous/server.h"
#include "test/common/captured_stderr.h"
#include "test/rendezvous/raw_requests.h"

using namespace cohort;
using namespace cohort::rendezvous;
using namespace cohort::rendezvous::testing;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

const std::string kSecret(32, 's');

Fd connect(int port) {
  return net::connect_tcp("127.0.0.1", port, Clock::now() + 5s);
}

}  // namespace

TEST_CASE("1500 connections at once each park a get that one set answers") {
  allow_descriptors(4 * 1500);
  RendezvousServer server("127.0.0.1", kSecret);
  const int n = 1500;
  std::vector<Fd> clients;
  for (int i = 0; i < n; ++i) {
    clients.push_back(connect(server.port()));
    // Each checks in on its own connection, as a worker does, and is answered.
    send_request(clients.back().get(), kSecret,
                 raw_request(RendezvousOp::kSet, "checkin/" + std::to_string(i), "start"));
  }
  for (auto& fd : clients)
    CHECK(read_response(fd.get(), kSecret, 10s).status == RendezvousStatus::kOk);
  CHECK(server.authenticated() == n);
  for (auto& fd : clients) {
    send_request(fd.get(), kSecret, raw_request(RendezvousOp::kGet, "round", "", 30'000));
  }
  REQUIRE(server.await_waiting_gets(n, 20s));
  server.set("round", "go");  // the launcher's own set wakes every one of them
  for (auto& fd : clients) {
    RendezvousResponse answer = read_response(fd.get(), kSecret, 10s);
    CHECK(answer.status == RendezvousStatus::kOk);
    CHECK(answer.value == "go");
  }
  CHECK(server.lookup("checkin/1499") == std::optional<std::string>("start"));
  clients.clear();
  CHECK(server.await_authenticated_at_most(0, 10s));
}

TEST_CASE("a client that stalls inside a frame delays nobody and is dropped at its timeout") {
  RendezvousServer server("127.0.0.1", kSecret, {.frame_timeout = 3s, .auth_timeout = 3s});
  // One sends a signed header and half its payload, one half a first header; both then stall.
  Fd payload_staller = connect(server.port());
  std::string sealed = seal_request(kSecret, raw_request(RendezvousOp::kSet, "stalled", "v"));
  std::string frame = signed_header(kSecret, static_cast<uint32_t>(sealed.size()), unix_millis(),
                                    random_bytes(16)) +
                      sealed.substr(0, sealed.size() / 2);
  REQUIRE(::send(payload_staller.get(), frame.data(), frame.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(frame.size()));
  Fd header_staller = connect(server.port());
  REQUIRE(::send(header_staller.get(), frame.data(), kSignedHeaderSize / 2, MSG_NOSIGNAL) > 0);
  auto start = Clock::now();
  RendezvousClient worker("127.0.0.1", server.port(), kSecret, 5s);
  for (int i = 0; i < 50; ++i) {
    worker.set("k" + std::to_string(i), "v");
    CHECK(worker.get("k" + std::to_string(i), 0ms) == "v");
  }
  // A hundred requests served while the stallers still hold their connections: none waited for
  // them (a server that did would take their timeout, 3 s, for the first request).
  CHECK(server.rejected() == 0);
  CHECK(Clock::now() - start < 2s);
  REQUIRE(server.await_rejected(2, 10s));
  auto dropped = Clock::now() - start;
  CHECK(dropped >= 2900ms);
  CHECK(dropped < 6s);
  for (int fd : {payload_staller.get(), header_staller.get()}) {
    CHECK(net::wait_readable(fd, Clock::now() + 2s));
    char byte;
    CHECK(::recv(fd, &byte, 1, MSG_DONTWAIT) <= 0);  // closed by the server
  }
  CHECK_FALSE(server.contains("stalled"));
  CHECK(server.authenticated() == 1);
}

TEST_CASE("a set answers the gets parked on its key and no others") {
  RendezvousServer server("127.0.0.1", kSecret);
  std::vector<Fd> on_key, elsewhere;
  for (int i = 0; i < 3; ++i) {
    on_key.push_back(connect(server.port()));
    send_request(on_key.back().get(), kSecret, raw_request(RendezvousOp::kGet, "k", "", 20'000));
  }
  elsewhere.push_back(connect(server.port()));
  send_request(elsewhere.back().get(), kSecret, raw_request(RendezvousOp::kGet, "other", "", 700));
  REQUIRE(server.await_waiting_gets(4, 5s));
  RendezvousClient setter("127.0.0.1", server.port(), kSecret, 5s);
  setter.set("k", "value");  // another client's set
  for (auto& fd : on_key) CHECK(read_response(fd.get(), kSecret, 5s).value == "value");
  // The other one was not woken: it times out at its own deadline, not before.
  auto start = Clock::now();
  RendezvousResponse timeout = read_response(elsewhere.back().get(), kSecret, 5s);
  CHECK(timeout.status == RendezvousStatus::kTimeout);
  CHECK_THAT(timeout.value, Contains("key 'other' was not set within 700 ms"));
  CHECK(Clock::now() - start > 300ms);
  // A parked get whose client hangs up is forgotten.
  Fd gone = connect(server.port());
  send_request(gone.get(), kSecret, raw_request(RendezvousOp::kGet, "never", "", 20'000));
  REQUIRE(server.await_waiting_gets(1, 5s));
  gone.reset();
  auto until = Clock::now() + 5s;  // the server notices the hang-up on its own time
  while (server.await_waiting_gets(1, 0ms) && Clock::now() < until) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK_FALSE(server.await_waiting_gets(1, 0ms));
}

TEST_CASE("connections past max_connections are refused with a message naming the limit") {
  RendezvousServer server("127.0.0.1", kSecret, {.max_connections = 2});
  cohort::testing::CapturedStderr captured;
  std::optional<RendezvousClient> a;
  a.emplace("127.0.0.1", server.port(), kSecret, 5s);
  RendezvousClient b("127.0.0.1", server.port(), kSecret, 5s);
  a->set("a", "1");
  b.set("b", "1");
  {
    RendezvousClient c("127.0.0.1", server.port(), kSecret, 300ms);
    CHECK_THROWS_WITH(c.set("c", "1"),
                      Contains("rendezvous server 127.0.0.1:" + std::to_string(server.port())));
  }
  CHECK_FALSE(server.contains("c"));
  CHECK_THAT(captured.text(), Contains("rendezvous: refusing 127.0.0.1:") &&
                                  Contains("2 authenticated connections are open already (the "
                                           "limit, max_connections)"));
  CHECK(server.authenticated() == 2);
  a.reset();  // its connection closes: room for another
  REQUIRE(server.await_authenticated_at_most(1, 5s));
  RendezvousClient c("127.0.0.1", server.port(), kSecret, 5s);
  c.set("c", "1");
  CHECK(server.contains("c"));
}

TEST_CASE("the server raises the descriptor limit for its connections") {
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  rlimit low = saved;
  low.rlim_cur = std::min<rlim_t>(512, saved.rlim_max);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  {
    RendezvousServer server("127.0.0.1", kSecret,
                            {.max_connections = 3000, .max_unauthenticated = 100});
    rlimit now{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &now) == 0);
    CHECK(now.rlim_cur >= std::min<rlim_t>(3100, saved.rlim_max));
  }
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &saved) == 0);
}
