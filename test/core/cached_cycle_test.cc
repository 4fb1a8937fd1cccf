// Rank 0's cached cycle at scale (issue 31): host leaders' runs of hits counted in O(1) through
// HitBits' difference array, with lagging ranks, stall reports and double hits as before; and rank
// 0's own requests counted as hits only where they equal the cached ones.
#include <catch2/catch.hpp>

#include "cohort/errors.h"
#include "core/coordination.h"
#include "core/hit_bits.h"
#include "core/negotiator.h"
#include "core/response_cache.h"

using namespace cohort;

namespace {

Request allreduce(std::string name, Shape shape = {4}) {
  return Request{.name = std::move(name), .shape = std::move(shape)};
}

uint32_t hit(uint32_t id, bool changed = false) {
  return (id << 1) | (changed ? 1 : 0);
}

// A job of `size` ranks whose rank 0 has cached w0, w1, w2 (ids 1, 2, 3).
struct Job {
  explicit Job(int size) : cache(8, size), negotiator(size, &cache) {
    for (const char* name : {"w0", "w1", "w2"}) ids.push_back(cache_id(cache.put(allreduce(name))));
  }
  ResponseCache cache;
  Negotiator negotiator;
  std::vector<uint32_t> ids;
};

std::vector<std::string> names(const std::vector<Response>& responses) {
  std::vector<std::string> out;
  for (const auto& r : responses) {
    CHECK(r.kind == Response::Kind::kExecute);
    out.insert(out.end(), r.names.begin(), r.names.end());
  }
  return out;
}

}  // namespace

TEST_CASE("hit bits: runs of several ranks and single hits add up, refusals change nothing") {
  HitBits bits(6);
  bits.reserve(140);  // three words a row
  std::vector<int> two{1, 2}, three{3, 4, 5};
  CHECK(bits.set_all(two, 60, 10));    // across a word boundary
  CHECK(bits.set_all(three, 62, 70));  // overlaps, and runs into the third word
  CHECK(bits.set(0, 65, 1) == 1);
  CHECK(bits.count(59) == 0);
  CHECK(bits.count(60) == 2);
  CHECK(bits.count(64) == 5);
  CHECK(bits.count(65) == 6);
  CHECK(bits.count(70) == 3);
  CHECK(bits.count(131 - 1) == 3);
  // Counted after a read as well as before it.
  CHECK(bits.set_all(two, 100, 1));
  CHECK(bits.count(100) == 5);
  CHECK(bits.has(129, 4));
  CHECK_FALSE(bits.has(61, 4));
  // Rank 2 has slot 69 already: nothing of the run is set or counted.
  std::vector<int> late{0, 2};
  CHECK_FALSE(bits.set_all(late, 69, 2));
  CHECK(bits.count(69) == 5);
  CHECK_FALSE(bits.has(70, 0));
  CHECK(bits.set(0, 62, 5) == 3);  // the first one set already (65), as an offset
  bits.clear({60, 65, 100});
  CHECK(bits.count(65) == 0);
  CHECK(bits.count(66) == 5);
  CHECK_FALSE(bits.has(65, 3));
  CHECK(bits.has(66, 3));
}

TEST_CASE("envelopes' runs with a rank that lags, then catches up, as hit by hit") {
  Job job(6);
  auto& n = job.negotiator;
  uint32_t w0 = job.ids[0];
  for (uint32_t id : job.ids) n.hit(0, hit(id));
  std::vector<int> first{1, 2}, second{3, 4};
  n.hit_run(first, hit(w0), 3);
  n.hit_run(second, hit(w0, true), 3);  // a changed buffer: everyone rebinds
  CHECK(n.take_ready().empty());        // rank 5 lags
  CHECK(n.pending() == 3);
  auto later = Negotiator::Clock::now() + std::chrono::seconds(10);
  CHECK(n.stall_report(later, std::chrono::seconds(1)) ==
        "3 collective(s) submitted by some ranks have waited more than 1 s for the others. "
        "Missing: rank 5 has not submitted ['w0', 'w1', 'w2'].");
  n.hit_run(5, hit(w0), 3);
  auto ready = n.take_ready();
  CHECK(names(ready) == std::vector<std::string>{"w0", "w1", "w2"});
  CHECK(ready.at(0).rebind);
  CHECK(n.pending() == 0);

  // The next cycle counts from nothing; a run from the middle, and the buffers as they were.
  for (int rank : {0, 5}) n.hit_run(rank, hit(job.ids[1]), 2);
  n.hit_run(first, hit(job.ids[1]), 2);
  CHECK(n.take_ready().empty());
  n.hit_run(second, hit(job.ids[1]), 2);
  ready = n.take_ready();
  CHECK(names(ready) == std::vector<std::string>{"w1", "w2"});
  CHECK_FALSE(ready.at(0).rebind);
}

TEST_CASE("a rank of an envelope that hits a slot twice is named, as hit by hit") {
  Job job(4);
  auto& n = job.negotiator;
  std::vector<int> leaders{2, 3};
  n.hit_run(leaders, hit(job.ids[0]), 3);
  std::vector<int> again{1, 3};
  CHECK_THROWS_MATCHES(
      n.hit_run(again, hit(job.ids[1]), 2), InternalError,
      Catch::Matchers::Message("rank 3 submitted 'w1' (cached id 2) twice while it was in flight"));
}

TEST_CASE("a full request of a name whose slot counted envelopes is compared with each rank's") {
  Job job(4);
  auto& n = job.negotiator;
  std::vector<int> host{2, 3};
  n.hit_run(host, hit(job.ids[0]), 3);
  n.hit(0, hit(job.ids[1]));
  n.add(1, allreduce("w1", {8}));
  for (int rank : {0, 1}) n.hit_run(rank, hit(job.ids[2]), 1);
  n.hit(0, hit(job.ids[0]));
  n.hit(1, hit(job.ids[0]));
  auto ready = n.take_ready();
  REQUIRE(ready.size() == 3);
  CHECK(ready[0].kind == Response::Kind::kError);
  CHECK(ready[0].error ==
        "allreduce 'w1': mismatched shapes: rank 0 [4], rank 1 [8], rank 2 [4], rank 3 [4]");
  CHECK(names({ready[1], ready[2]}) == std::vector<std::string>{"w0", "w2"});
}

namespace {

// Rank 0 of 3 ranks, with the simulated workers' cache view.
struct Rank0 {
  Config config;
  Timeline timeline;
  Coordination coordination{config, 3, timeline};
  CacheView view;

  // One cycle in which ranks 1 and 2 submit `theirs` and rank 0 `own`; applies the answer.
  ResponseList cycle(const std::vector<Request>& theirs, std::vector<Request> own) {
    RequestList list;
    list.applied = view.applied();
    for (Request r : theirs) view.add(list, std::move(r));
    auto bytes = encode(list);
    auto out = coordination.cycle({{1, bytes}, {2, bytes}}, std::move(own), false);
    REQUIRE(out.has_value());
    auto applied = decode_response_list(encode(*out));
    view.apply(applied);
    return applied;
  }
};

}  // namespace

TEST_CASE("rank 0's own request is a hit only where it equals the cached one") {
  Rank0 r;
  std::vector<Request> model{allreduce("w0"), allreduce("w1", {2, 3})};
  r.cycle(model, model);  // in full: cached from now on
  // Its buffer changed: still a hit, and everyone rebinds.
  auto own = model;
  own[0].buffer_changed = true;
  model[0].buffer_changed = model[1].buffer_changed = false;
  auto answer = r.cycle(model, own);
  REQUIRE(answer.responses.size() == 1);
  CHECK(answer.responses[0].error.empty());
  CHECK(answer.responses[0].rebind);
  CHECK(answer.responses[0].names == std::vector<std::string>{"w0", "w1"});
  // Another shape: the full way, and the same error as when nothing was cached.
  own = model;
  own[1].shape = {3, 2};
  answer = r.cycle(model, own);
  REQUIRE(answer.responses.size() == 2);
  CHECK(answer.responses[0].names == std::vector<std::string>{"w0"});
  CHECK(answer.responses[0].error.empty());
  CHECK(answer.responses[1].error ==
        "allreduce 'w1': mismatched shapes: rank 0 [3, 2], rank 1 [2, 3], rank 2 [2, 3]");
  // Bytes other than the last list's are decoded afresh, and refused if they do not decode.
  std::vector<std::byte> bad{std::byte{0xC2}};
  CHECK_THROWS_WITH(r.coordination.cycle({{1, bad}}, {}, false),
                    Catch::Matchers::StartsWith("rank 1 sent a malformed control message"));
}
