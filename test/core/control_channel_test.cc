#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <thread>

#include "base/cancellation.h"
#include "base/deadline.h"
#include "base/framed_socket.h"
#include "base/net.h"
#include "base/wire.h"
#include "cohort/errors.h"
#include "core/control_channel.h"

using namespace cohort;
using namespace std::chrono_literals;

namespace {
std::vector<std::byte> bytes(std::string_view s) {
  auto p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

std::vector<ControlMessage> wait_for_messages(ControlChannel& ch, size_t n) {
  std::vector<ControlMessage> all;
  for (int i = 0; i < 100 && all.size() < n; ++i) {
    for (auto& m : ch.wait(100ms)) all.push_back(std::move(m));
  }
  return all;
}
}  // namespace

TEST_CASE("rank 0 and workers exchange framed messages over a real socket") {
  ControlChannel root = ControlChannel::listen("127.0.0.1", 3, "tok");
  std::vector<ControlChannel> workers(2);
  std::thread t1([&] { workers[0] = ControlChannel::connect(1, 3, root.address(), "tok", 5s); });
  std::thread t2([&] { workers[1] = ControlChannel::connect(2, 3, root.address(), "tok", 5s); });
  root.accept_workers(5s);
  t1.join();
  t2.join();

  workers[1].send(0, bytes("from two"));
  workers[0].send(0, bytes("from one"));
  auto got = wait_for_messages(root, 2);
  REQUIRE(got.size() == 2);
  for (auto& m : got) {
    CHECK(m.payload == bytes(m.peer == 1 ? "from one" : "from two"));
  }
  std::vector<std::byte> big(3 << 20, std::byte{7});  // larger than socket buffers
  root.send(2, big);
  auto reply = wait_for_messages(workers[1], 1);
  REQUIRE(reply.size() == 1);
  CHECK(reply[0].payload == big);
}

TEST_CASE("wake() interrupts a wait and a closed peer is an InternalError") {
  ControlChannel root = ControlChannel::listen("127.0.0.1", 2, "tok");
  ControlChannel worker;
  std::thread t([&] { worker = ControlChannel::connect(1, 2, root.address(), "tok", 5s); });
  root.accept_workers(5s);
  t.join();
  root.wake();
  auto start = std::chrono::steady_clock::now();
  CHECK(root.wait(10s).empty());
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  worker = ControlChannel();  // closes the socket
  CHECK_THROWS_WITH(wait_for_messages(root, 1), Catch::Matchers::Contains("closed by the peer"));
}

TEST_CASE("a connection with the wrong token is refused and the job still forms") {
  ControlChannel root = ControlChannel::listen("127.0.0.1", 2, "right");
  std::thread intruder([&] {
    try {
      ControlChannel::connect(1, 2, root.address(), "wrong", 2s);
    } catch (const InternalError&) {
    }
  });
  intruder.join();
  ControlChannel worker;
  std::thread t([&] { worker = ControlChannel::connect(1, 2, root.address(), "right", 5s); });
  root.accept_workers(5s);
  t.join();
  worker.send(0, bytes("hi"));
  CHECK(wait_for_messages(root, 1).size() == 1);
}

namespace {

using Clock = std::chrono::steady_clock;

// A raw connection to `address` ("ip:port") that sends `bytes` (possibly none) and stays open.
Fd stray(const std::string& address, const std::string& bytes = "") {
  auto colon = address.rfind(':');
  sockaddr_in to =
      net::resolve_ipv4(address.substr(0, colon), std::stoi(address.substr(colon + 1)));
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
  if (!bytes.empty()) {
    REQUIRE(::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
  }
  return fd;
}

std::string hello_bytes(int rank, const std::string& token, uint32_t announced = 0) {
  wire::Writer w;
  w.i32(rank);
  w.str(token);
  uint32_t len = htonl(announced ? announced : static_cast<uint32_t>(w.bytes().size()));
  std::string out(reinterpret_cast<const char*>(&len), sizeof len);  // big-endian, as framed
  out.append(reinterpret_cast<const char*>(w.bytes().data()), w.bytes().size());
  return out;
}

// A listener whose accept queue is full: a connect to it neither completes nor is refused.
struct Blackhole {
  Fd listener;
  std::vector<Fd> queued;
  std::string address;

  Blackhole() : listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr = net::resolve_ipv4("127.0.0.1", 0);
    REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listener.get(), 0) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
    // Fill the queue: connects that complete at once are queued; the first that does not is
    // left hanging, and so will every later one.
    for (int i = 0; i < 16; ++i) {
      Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      int rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
      pollfd p{fd.get(), POLLOUT, 0};
      bool done = rc == 0 || ::poll(&p, 1, 200) == 1;
      queued.push_back(std::move(fd));
      if (!done) return;
    }
    FAIL("the accept queue never filled");
  }
};

}  // namespace

TEST_CASE("idle and garbage connections during accept_workers neither delay nor fail it") {
  ControlChannel root = ControlChannel::listen("127.0.0.1", 3, "tok");
  // Queued before the real ranks, so accepted first.
  std::vector<Fd> strays;
  strays.push_back(stray(root.address()));                      // idle
  strays.push_back(stray(root.address(), "\xff\xff\xff\xff"));  // an enormous hello
  strays.push_back(stray(root.address(), hello_bytes(1, "wrong")));
  strays.push_back(stray(root.address(), hello_bytes(1, "tok", 100).substr(0, 10)));  // cut
  strays.push_back(stray(root.address(), hello_bytes(7, "tok")));                     // no rank 7
  strays.push_back(stray(root.address(), "garbage that is not a hello at all"));
  strays.push_back(stray(root.address()));  // idle
  std::vector<ControlChannel> workers(2);
  std::thread t1([&] { workers[0] = ControlChannel::connect(1, 3, root.address(), "tok", 5s); });
  std::thread t2([&] { workers[1] = ControlChannel::connect(2, 3, root.address(), "tok", 5s); });
  auto start = Clock::now();
  root.accept_workers(10s);
  CHECK(Clock::now() - start < 1s);  // the hello deadline alone is 2 s
  t1.join();
  t2.join();
  workers[1].send(0, bytes("after the strays"));
  auto got = wait_for_messages(root, 1);
  REQUIRE(got.size() == 1);
  CHECK(got[0].peer == 2);
}

TEST_CASE("bytes a rank sends right after its hello are kept for wait()") {
  ControlChannel root = ControlChannel::listen("127.0.0.1", 2, "tok");
  ControlChannel worker = ControlChannel::connect(1, 2, root.address(), "tok", 5s);
  worker.send(0, bytes("early"));  // before rank 0 accepted anything
  root.accept_workers(5s);
  auto got = wait_for_messages(root, 1);
  REQUIRE(got.size() == 1);
  CHECK(got[0].payload == bytes("early"));
}

TEST_CASE("accept_workers names the ranks that never connected") {
  ControlChannel root = ControlChannel::listen("127.0.0.1", 4, "tok");
  ControlChannel worker = ControlChannel::connect(2, 4, root.address(), "tok", 5s);
  Fd idle = stray(root.address());
  auto start = Clock::now();
  CHECK_THROWS_WITH(root.accept_workers(300ms),
                    Catch::Matchers::Contains("timed out waiting for 2 rank(s)") &&
                        Catch::Matchers::Contains("rank 1, 3"));
  CHECK(Clock::now() - start < 2s);
}

TEST_CASE("connect to a listener that never accepts ends at its deadline") {
  Blackhole hole;
  auto start = Clock::now();
  CHECK_THROWS_WITH(ControlChannel::connect(1, 2, hole.address, "tok", 300ms),
                    Catch::Matchers::Contains("timed out opening the control connection"));
  auto took = Clock::now() - start;
  CHECK(took >= 300ms);
  CHECK(took < 2s);
}

TEST_CASE("a cancellation ends accept_workers and connect at once with its reason") {
  SECTION("accept") {
    ControlChannel root = ControlChannel::listen("127.0.0.1", 3, "tok");
    Fd idle = stray(root.address());
    Cancellation cancel;
    auto start = Clock::now();
    std::thread canceller([&] { cancel.cancel("round 4 was abandoned"); });
    CHECK_THROWS_WITH(root.accept_workers(30s, &cancel), "round 4 was abandoned");
    canceller.join();
    CHECK(Clock::now() - start < 2s);
  }
  SECTION("connect") {
    Blackhole hole;
    Cancellation cancel;
    auto start = Clock::now();
    std::thread canceller([&] { cancel.cancel("round 4 was abandoned"); });
    CHECK_THROWS_WITH(ControlChannel::connect(1, 2, hole.address, "tok", 30s, "control", &cancel),
                      "round 4 was abandoned");
    canceller.join();
    CHECK(Clock::now() - start < 2s);
  }
  SECTION("connect while rank 0 is not listening yet") {
    int port;
    {
      ControlChannel gone = ControlChannel::listen("127.0.0.1", 2, "tok");
      port = std::stoi(gone.address().substr(gone.address().rfind(':') + 1));
    }
    Cancellation cancel;
    std::thread canceller([&] { cancel.cancel("stopping"); });
    auto start = Clock::now();
    CHECK_THROWS_WITH(ControlChannel::connect(1, 2, "127.0.0.1:" + std::to_string(port), "tok", 30s,
                                              "control", &cancel),
                      "stopping");
    canceller.join();
    CHECK(Clock::now() - start < 2s);
  }
}

TEST_CASE("poll_millis rounds up, never below zero, and waits forever without a deadline") {
  auto now = SteadyClock::now();
  CHECK(poll_millis(now, now - 1s) == 0);
  CHECK(poll_millis(now, SteadyClock::time_point::min()) == 0);
  CHECK(poll_millis(now, now) == 0);
  CHECK(poll_millis(now, now + 1us) == 1);  // a poll of 0 ms would wake before the deadline
  CHECK(poll_millis(now, now + 1500us) == 2);
  CHECK(poll_millis(now, now + 3ms) == 3);
  CHECK(poll_millis(now, now + std::chrono::hours(1000)) == 1 << 30);
  CHECK(poll_millis(now, SteadyClock::time_point::max()) == -1);
}

TEST_CASE("frames carry a big-endian length and are split whole") {
  std::vector<std::byte> sent;
  net::append_frame(sent, bytes("ab"));
  net::append_frame(sent, bytes(""));
  net::append_frame(sent, bytes("xyz"));
  CHECK(std::vector<std::byte>(sent.begin(), sent.begin() + 6) ==
        bytes(std::string_view("\0\0\0\2ab", 6)));
  CHECK(net::frame_length(sent.data() + 6 + 4) == 3);
  // The last frame cut short: the whole ones are taken, the cut one waits for its rest.
  std::vector<std::byte> received(sent.begin(), sent.end() - 1);
  auto frames = net::take_frames(received, 16);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0] == bytes("ab"));
  CHECK(frames[1].empty());
  CHECK(received.size() == 4 + 2);
  received.push_back(sent.back());
  frames = net::take_frames(received, 16);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0] == bytes("xyz"));
  CHECK(received.empty());
  // A length over the limit is refused from its header alone.
  std::vector<std::byte> oversized(sent.begin(), sent.begin() + 4);
  oversized[0] = std::byte{1};
  CHECK_THROWS_AS(net::take_frames(oversized, 16), net::FrameError);
}
