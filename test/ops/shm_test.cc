// The shared-memory segment and group with their members as threads of one process: the
// descriptor's hand-over and who is refused it, the bounded waits (timeouts naming who is
// missing, cancellation, abort from another thread), and that nothing stays mapped. The
// collectives themselves run in separate processes (ops.shm_backend_np*, backend_checks.h).
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cohort/errors.h"
#include "ops/shm_collectives.h"
#include "ops/shm_group.h"
#include "ops/shm_segment.h"
#include "shm_mappings.h"

using namespace cohort;
using namespace cohort::ops;
using namespace std::chrono_literals;
using cohort::ops::testing::mapped_segments;

namespace {

constexpr size_t kSlot = 4096;

SteadyClock::time_point in(std::chrono::milliseconds time) {
  return SteadyClock::now() + time;
}

// Every member's segment, local rank 0's made by create() while the others open() it.
std::vector<ShmSegment> segments(const ShmRendezvous& meet, int size, size_t bytes) {
  std::vector<std::future<ShmSegment>> opened;
  for (int rank = 1; rank < size; ++rank) {
    opened.push_back(std::async(
        std::launch::async, [&, rank] { return ShmSegment::open(meet, rank, in(10s), nullptr); }));
  }
  std::vector<ShmSegment> all;
  all.push_back(ShmSegment::create(meet, size, bytes, in(10s), nullptr));
  for (auto& segment : opened) all.push_back(segment.get());
  return all;
}

std::vector<std::unique_ptr<ShmGroup>> groups(int size, std::chrono::milliseconds timeout) {
  auto all = segments(ShmRendezvous::random(), size, ShmGroup::segment_bytes(size, kSlot));
  std::vector<int> names;
  for (int rank = 0; rank < size; ++rank) names.push_back(10 + rank);  // world ranks differ
  std::vector<std::unique_ptr<ShmGroup>> made;
  for (int rank = 0; rank < size; ++rank) {
    made.push_back(std::make_unique<ShmGroup>(std::move(all[rank]), rank, names, kSlot, timeout));
  }
  return made;
}

std::string error_of(std::future<void>& done) {
  try {
    done.get();
  } catch (const InternalError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("shm segment: every local rank maps the memory local rank 0 made, and unmaps it") {
  int before = mapped_segments();
  {
    auto all = segments(ShmRendezvous::random(), 3, 3 * kSlot);
    REQUIRE(all.size() == 3);
    CHECK(mapped_segments() == before + 3);
    all[2].data()[100] = std::byte{42};
    CHECK(all[0].data()[100] == std::byte{42});
    CHECK(all[1].data()[100] == std::byte{42});
    CHECK(all[1].size() == 3 * kSlot);
  }
  CHECK(mapped_segments() == before);
}

TEST_CASE("shm segment: a connection without the token gets nothing, the real rank still joins") {
  ShmRendezvous meet = ShmRendezvous::random();
  auto leader = std::async(std::launch::async,
                           [&] { return ShmSegment::create(meet, 2, kSlot, in(10s), nullptr); });
  ShmRendezvous forged = meet;
  forged.token[0] ^= 1;
  CHECK_THROWS_WITH(ShmSegment::open(forged, 1, in(10s), nullptr),
                    Catch::Contains("closed the connection without the segment"));
  ShmSegment mine = ShmSegment::open(meet, 1, in(10s), nullptr);
  CHECK(leader.get().size() == kSlot);
}

TEST_CASE("shm segment: local rank 0 names the local ranks that did not connect in time") {
  ShmRendezvous meet = ShmRendezvous::random();
  auto one =
      std::async(std::launch::async, [&] { return ShmSegment::open(meet, 1, in(10s), nullptr); });
  CHECK_THROWS_WITH(ShmSegment::create(meet, 4, kSlot, in(300ms), nullptr),
                    Catch::Contains("local ranks 2, 3 did not connect to local rank 0"));
  CHECK(one.get().size() == kSlot);
}

TEST_CASE("shm segment: a rank waiting for local rank 0 stops at the deadline or cancellation") {
  ShmRendezvous meet = ShmRendezvous::random();
  CHECK_THROWS_WITH(ShmSegment::open(meet, 1, in(200ms), nullptr),
                    Catch::Contains("local rank 0 did not listen before the timeout"));
  Cancellation cancel;
  auto waiting = std::async(std::launch::async,
                            [&] { return ShmSegment::create(meet, 2, kSlot, in(60s), &cancel); });
  cancel.cancel("round 7 was abandoned");
  REQUIRE(waiting.wait_for(10s) == std::future_status::ready);
  CHECK_THROWS_WITH(waiting.get(), Catch::Contains("round 7 was abandoned"));
}

TEST_CASE("shm group: a barrier names the members that did not arrive before the timeout") {
  auto all = groups(3, 300ms);
  auto first = std::async(std::launch::async, [&] { all[0]->barrier("allreduce"); });
  CHECK_THROWS_WITH(all[1]->barrier("allreduce"),
                    Catch::Contains("shared memory allreduce: rank(s) 12 did not arrive"));
  CHECK(error_of(first).find("rank(s) 12 did not arrive") != std::string::npos);
}

TEST_CASE("shm group: an abort from another thread ends every member's wait at once") {
  // Member 2 never arrives; the barrier would wait a minute. Member 1's abort (the heartbeat's
  // verdict) ends both waits, and every later barrier fails at once.
  auto all = groups(3, 60s);
  auto zero = std::async(std::launch::async, [&] { all[0]->barrier("broadcast"); });
  auto one = std::async(std::launch::async, [&] { all[1]->barrier("broadcast"); });
  all[1]->abort("rank 12 has sent no heartbeat for 5.0 s");
  REQUIRE(zero.wait_for(10s) == std::future_status::ready);
  REQUIRE(one.wait_for(10s) == std::future_status::ready);
  CHECK(error_of(zero) == "shared memory: rank 11 failed: rank 12 has sent no heartbeat for 5.0 s");
  CHECK(error_of(one) == "rank 12 has sent no heartbeat for 5.0 s");
  CHECK_THROWS_WITH(all[2]->barrier("barrier"), Catch::Contains("rank 11 failed"));
}

TEST_CASE("shm group: a reduction over many steps gives every member the same sums") {
  auto all = groups(3, 10s);
  size_t count = 5 * kSlot / sizeof(float) + 3;  // six steps, the last one short
  std::vector<std::vector<float>> results(3);
  std::vector<std::thread> members;
  for (int rank = 0; rank < 3; ++rank) {
    members.emplace_back([&, rank] {
      std::vector<float> input(count);
      for (size_t i = 0; i < count; ++i) input[i] = float(i % 1000) * float(rank + 1);
      results[rank].resize(count);
      shm::reduce(*all[rank], "allreduce", input.data(), count, DataType::kFloat32, ReduceOp::kSum,
                  [&](size_t first, size_t n, const std::byte* values) {
                    std::memcpy(results[rank].data() + first, values, n * sizeof(float));
                  });
    });
  }
  for (auto& member : members) member.join();
  for (size_t i = 0; i < count; i += 997) CHECK(results[0][i] == float(i % 1000) * 6);
  CHECK(results[1] == results[0]);
  CHECK(results[2] == results[0]);
}
