// What rank 0 allocates in a cached cycle with host leaders (issue 31): as much with 64 leaders'
// envelopes as with 2, so that its cost per envelope is word operations, not the allocator's.
// Its own binary: it replaces the global operator new to count this thread's allocations, which
// the sanitizers' builds own; there it only checks the answers.
#include <catch2/catch.hpp>

#include "allocation_count.h"
#include "core/coordination.h"
#include "core/envelope.h"

using cohort_test_allocation::allocations;
using cohort_test_allocation::counting;
using namespace cohort;

namespace {

constexpr int kPerHost = 8;

std::vector<Request> model() {
  std::vector<Request> out;
  for (int i = 0; i < 50; ++i) {
    out.push_back(Request{.name = "layer." + std::to_string(i) + ".weight", .shape = {64, 4}});
  }
  return out;
}

// Rank 0 of `hosts` hosts of kPerHost ranks, every rank submitting model() each cycle; returns
// what the cycle after `warm` cached ones allocated inside Coordination::cycle.
size_t allocations_in_cycle(int hosts, int warm) {
  int size = hosts * kPerHost;
  std::vector<int> leader_of(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) leader_of[r] = r - r % kPerHost;
  Config config;
  Timeline timeline;
  Coordination rank0(config, size, timeline, leader_of);
  CacheView view;
  size_t counted = 0;
  for (int step = 0; step <= warm + 1; ++step) {
    RequestList list;
    list.applied = view.applied();
    for (auto& r : model()) view.add(list, std::move(r));
    auto bytes = encode(list);
    std::vector<ControlMessage> messages;
    for (int r = 1; r < kPerHost; ++r) messages.push_back({r, bytes});
    for (int leader = kPerHost; leader < size; leader += kPerHost) {
      EnvelopeBuilder up;
      for (int r = leader; r < leader + kPerHost; ++r) up.add(r, bytes);
      messages.push_back({leader, up.take()});
    }
    auto own = model();
    counting = step > warm;
    allocations = 0;
    auto out = rank0.cycle(std::move(messages), std::move(own), false);
    counting = false;
    counted = allocations;
    REQUIRE(out.has_value());
    REQUIRE(out->responses.size() == 1);  // every name ready, fused
    CHECK(out->responses[0].names.size() == 50);
    CHECK(out->responses[0].error.empty());
    auto applied = decode_response_list(encode(*out));
    view.apply(applied);
  }
  return counted;
}

}  // namespace

TEST_CASE("a cached cycle allocates as much with 64 host leaders' envelopes as with 2") {
  // In the sanitizers' builds (whose runtimes own operator new) only the answers are checked.
  [[maybe_unused]] size_t few = allocations_in_cycle(3, 2);
  [[maybe_unused]] size_t many = allocations_in_cycle(65, 2);
#ifndef COHORT_SANITIZED
  CHECK(many == few);
  CHECK(few > 0);  // counted: rank 0's own names, the response
#endif
}
