// What rank 0 allocates to send a message to many peers: nothing, once each peer's queue has grown
// to the message's size (the heartbeat sends a beat to every rank every quarter of the peer
// timeout). Its own binary: it replaces the global operator new to count this thread's
// allocations, which the sanitizers' builds own; there it only checks that the messages arrive.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <new>
#include <thread>

#include "allocation_count.h"
#include "core/control_channel.h"

using cohort_test_allocation::allocations;
using cohort_test_allocation::counting;
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
