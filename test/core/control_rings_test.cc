// The control channel between ranks of one host (ControlChannel::use_rings): real sockets on
// loopback for the doorbells, a real memfd segment for the rings, ranks as threads.
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>
#include <vector>

#include "base/deadline.h"
#include "cohort/errors.h"
#include "core/control_channel.h"
#include "core/control_ring.h"
#include "ops/shm_segment.h"

using namespace cohort;
using namespace std::chrono_literals;

namespace {

std::vector<std::byte> pattern(size_t n, unsigned seed) {
  std::vector<std::byte> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
  return out;
}

// Rank 0 and `size - 1` workers, connected and sharing their rings; `observer` maps the same
// segment, for the tests that tamper with it.
struct RingStar {
  ControlChannel root;
  std::vector<ControlChannel> workers;
  std::optional<ops::ShmSegment> observer;

  RingStar(int size, std::chrono::microseconds spin) : workers(size - 1) {
    root = ControlChannel::listen("127.0.0.1", size, "tok");
    std::vector<std::thread> threads;
    for (int r = 1; r < size; ++r) {
      threads.emplace_back(
          [&, r] { workers[r - 1] = ControlChannel::connect(r, size, root.address(), "tok", 5s); });
    }
    root.accept_workers(5s);
    for (auto& t : threads) t.join();
    threads.clear();

    auto meet = ops::ShmRendezvous::random();
    auto deadline = SteadyClock::now() + 5s;
    std::vector<std::optional<ops::ShmSegment>> opened(size + 1);
    for (int r = 1; r <= size; ++r) {
      threads.emplace_back(
          [&, r] { opened[r] = ops::ShmSegment::open(meet, r, deadline, nullptr); });
    }
    opened[0] = ops::ShmSegment::create(meet, size + 1, ControlChannel::rings_bytes(size), deadline,
                                        nullptr);
    for (auto& t : threads) t.join();
    root.use_rings(std::move(*opened[0]), spin);
    for (int r = 1; r < size; ++r) workers[r - 1].use_rings(std::move(*opened[r]), spin);
    observer = std::move(opened[size]);
  }
};

std::vector<ControlMessage> receive(ControlChannel& ch, size_t n) {
  std::vector<ControlMessage> all;
  auto deadline = SteadyClock::now() + 10s;
  while (all.size() < n && SteadyClock::now() < deadline) {
    for (auto& m : ch.wait(100ms)) all.push_back(std::move(m));
  }
  return all;
}

}  // namespace

TEST_CASE("a control ring keeps bytes in order across its end and takes no more than it holds") {
  std::vector<std::byte> memory(ControlRing::footprint() + 64);
  auto* at = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(memory.data()) + 63) &
                                          ~uintptr_t{63});
  ControlRing writer(at, 1), reader(at, 0);
  CHECK_FALSE(reader.readable());
  auto first = pattern(200 << 10, 1);
  CHECK(writer.write(first.data(), first.size()) == first.size());
  std::vector<std::byte> got(first.size());
  CHECK(reader.read(got.data(), 150 << 10) == size_t{150} << 10);
  // The next write wraps around the end of the data area; what does not fit is left.
  auto second = pattern(300 << 10, 2);
  size_t taken = writer.write(second.data(), second.size());
  CHECK(taken == (size_t{256} << 10) - (50 << 10));
  CHECK_FALSE(writer.writable());
  CHECK(reader.read(got.data() + (150 << 10), 50 << 10) == size_t{50} << 10);
  CHECK(got == first);
  std::vector<std::byte> rest(taken);
  CHECK(reader.read(rest.data(), rest.size()) == taken);
  CHECK(std::equal(rest.begin(), rest.end(), second.begin()));
  CHECK_FALSE(reader.readable());
}

TEST_CASE("a control ring whose counters are impossible is an InternalError naming the peer") {
  std::vector<std::byte> memory(ControlRing::footprint() + 64);
  auto* at = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(memory.data()) + 63) &
                                          ~uintptr_t{63});
  ControlRing reader(at, 3);
  uint64_t forged = uint64_t{1} << 40;
  std::memcpy(at, &forged, sizeof forged);  // the writer's counter comes first
  CHECK_THROWS_WITH(reader.readable(),
                    Catch::Matchers::Contains("rank 3") && Catch::Matchers::Contains("corrupt"));
  std::byte byte;
  CHECK_THROWS_AS(reader.read(&byte, 1), InternalError);
}

TEST_CASE("ranks of one host exchange messages through the rings, larger ones than a ring holds") {
  // Without spinning every wait sleeps, so each message needs its doorbell; with it, none does.
  auto spin = GENERATE(0us, 50us);
  RingStar star(3, spin);
  star.workers[1].send(0, pattern(100, 2));
  star.workers[0].send(0, pattern(100, 1));
  auto got = receive(star.root, 2);
  REQUIRE(got.size() == 2);
  for (auto& m : got) CHECK(m.payload == pattern(100, m.peer));

  // Twelve times a ring: the writer fills it, sleeps, and is rung when the reader has made room.
  auto big = pattern(3 << 20, 9);
  std::thread sender([&] {
    star.root.send(2, big);
    star.root.flush(10s);
  });
  auto reply = receive(star.workers[1], 1);
  sender.join();
  REQUIRE(reply.size() == 1);
  CHECK(reply[0].peer == 0);
  CHECK(reply[0].payload == big);
}

TEST_CASE("with rings, wake() still ends a wait and a closed peer is still an InternalError") {
  RingStar star(2, 50us);
  star.root.wake();
  auto start = SteadyClock::now();
  CHECK(star.root.wait(10s).empty());
  CHECK(SteadyClock::now() - start < 5s);
  // A message sent just before the peer goes is delivered before the break is reported.
  star.workers[0].send(0, pattern(10, 4));
  star.workers[0] = ControlChannel();
  auto got = star.root.wait(1s);
  REQUIRE(got.size() == 1);
  CHECK_THROWS_WITH(receive(star.root, 1), Catch::Matchers::Contains("closed by the peer"));
}

TEST_CASE("a ring a peer corrupts fails the reader with an InternalError") {
  RingStar star(2, 0us);
  uint64_t forged = uint64_t{1} << 40;
  std::memcpy(star.observer->data(), &forged, sizeof forged);  // rank 1's ring towards rank 0
  star.workers[0].wake();  // the worker is not involved; the root reads the forged ring
  CHECK_THROWS_WITH(star.root.wait(100ms), Catch::Matchers::Contains("corrupt"));
}
