#include <catch2/catch.hpp>
#include <thread>

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
