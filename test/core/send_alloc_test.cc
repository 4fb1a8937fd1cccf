// What rank 0 allocates to send a message to many peers: nothing, once each peer's queue has grown
// to the message's size (the heartbeat sends a beat to every rank every quarter of the peer
// timeout). Its own binary: it replaces the global operator new to count this thread's
// allocations, which the sanitizers' builds own; there it only checks that the messages arrive.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <new>
#include <thread>

#include "core/control_channel.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COHORT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define COHORT_SANITIZED 1
#endif
#endif

namespace {
thread_local bool counting = false;
thread_local size_t allocations = 0;
}  // namespace

#ifndef COHORT_SANITIZED
namespace {
void* allocate(size_t n) {
  if (counting) ++allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(size_t n) {
  return allocate(n);
}
void* operator new[](size_t n) {
  return allocate(n);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t) noexcept {
  std::free(p);
}
#endif

using namespace cohort;
using namespace std::chrono_literals;

TEST_CASE("sending one message to 100 peers allocates nothing once their queues have grown") {
  constexpr int kSize = 101;
  std::vector<ControlChannel> ends(kSize);
  ends[0] = ControlChannel::listen("127.0.0.1", kSize, "tok", "heartbeat");
  std::vector<std::thread> workers;
  for (int r = 1; r < kSize; ++r) {
    workers.emplace_back([&, r] {
      ends[r] = ControlChannel::connect(r, kSize, ends[0].address(), "tok", 20s, "heartbeat");
    });
  }
  ends[0].accept_workers(20s);
  for (auto& t : workers) t.join();
  const std::vector<std::byte> beat{std::byte{1}};
  for (int round = 0; round < 3; ++round) {
    if (round > 0) counting = true;
    for (int r = 1; r < kSize; ++r) ends[0].send(r, beat);
    counting = false;
    for (int r = 1; r < kSize; ++r) {
      std::vector<ControlMessage> got;
      for (int i = 0; i < 50 && got.empty(); ++i) got = ends[r].wait(100ms);
      REQUIRE(got.size() == 1);
      CHECK(got[0].payload == beat);
    }
  }
#ifndef COHORT_SANITIZED
  CHECK(allocations == 0);
#endif
}
