// Rank 0's cached fast path (Negotiator::hit, core/negotiator_hits.cc): hits counted against
// their ids, a bit per rank, keep every promise of the full table.
#include <catch2/catch.hpp>

#include "cohort/errors.h"
#include "core/negotiator.h"
#include "core/response_cache.h"

using namespace cohort;

namespace {

// A job of `size` ranks whose rank 0 has cached `a` (an allreduce of 4 floats) as id 1.
struct Job {
  explicit Job(int size, size_t capacity = 8) : cache(capacity, size), negotiator(size, &cache) {}
  uint32_t cache_put(const Request& r) { return cache_id(cache.put(r)); }
  ResponseCache cache;
  Negotiator negotiator;
};

Request allreduce(std::string name, Shape shape = {4}) {
  return Request{.name = std::move(name), .shape = std::move(shape)};
}

uint32_t hit(uint32_t id, bool changed = false) {
  return (id << 1) | (changed ? 1 : 0);
}

}  // namespace

TEST_CASE("a cached name is ready only once every member hit it") {
  Job job(3);
  uint32_t a = job.cache_put(allreduce("a"));
  job.negotiator.hit(0, hit(a));
  job.negotiator.hit(2, hit(a));
  CHECK(job.negotiator.take_ready().empty());
  CHECK(job.negotiator.pending() == 1);
  job.negotiator.hit(1, hit(a, true));
  auto ready = job.negotiator.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kExecute);
  CHECK(ready[0].names == std::vector<std::string>{"a"});
  CHECK(ready[0].cache_ids == std::vector<uint32_t>{a});  // known: not introduced again
  CHECK(ready[0].counts == std::vector<int64_t>{4});
  CHECK(ready[0].rebind);  // rank 1's buffer changed
  CHECK(job.negotiator.pending() == 0);
  // The next cycle starts from nothing.
  job.negotiator.hit(0, hit(a));
  CHECK(job.negotiator.take_ready().empty());
}

TEST_CASE("runs of hits are ready in id order, the same as one hit at a time") {
  Job job(4);
  std::vector<uint32_t> ids;
  for (const char* name : {"w0", "w1", "w2"}) ids.push_back(job.cache_put(allreduce(name)));
  for (int rank = 0; rank < 4; ++rank) {
    if (rank == 2) {
      for (uint32_t id : ids) job.negotiator.hit(rank, hit(id));
    } else {
      job.negotiator.hit_run(rank, hit(ids[0]), 3);
    }
  }
  auto ready = job.negotiator.take_ready();
  REQUIRE(ready.size() == 3);
  CHECK(ready[0].names[0] == "w0");
  CHECK(ready[2].names[0] == "w2");
  CHECK_FALSE(ready[0].rebind);
}

TEST_CASE("a rank that hits an id twice while it is in flight is a broken peer") {
  Job job(3);
  uint32_t a = job.cache_put(allreduce("a"));
  uint32_t b = job.cache_put(allreduce("b"));
  job.negotiator.hit(0, hit(a));
  job.negotiator.hit(1, hit(a));
  CHECK_THROWS_MATCHES(
      job.negotiator.hit(1, hit(a)), InternalError,
      Catch::Matchers::Message("rank 1 submitted 'a' (cached id 1) twice while it was in flight"));
  job.negotiator.hit(2, hit(b));
  CHECK_THROWS_MATCHES(
      job.negotiator.hit_run(2, hit(a), 2), InternalError,
      Catch::Matchers::Message("rank 2 submitted 'b' (cached id 2) twice while it was in flight"));
}

TEST_CASE("a hit for an evicted id still resolves until every rank has seen the eviction") {
  Job job(2, 1);
  uint32_t a = job.cache_put(allreduce("a"));
  job.cache_put(allreduce("b"));  // evicts a: retired, not forgotten
  job.negotiator.hit(0, hit(a));
  job.negotiator.hit(1, hit(a));
  auto ready = job.negotiator.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kExecute);
  CHECK(ready[0].names[0] == "a");
  CHECK(introduces(ready[0].cache_ids[0]));  // cached again, under a new id
  CHECK(cache_id(ready[0].cache_ids[0]) != a);
  CHECK_THROWS_WITH(job.negotiator.hit(0, hit(77)),
                    "a rank referred to cached tensor id 77, which rank 0 does not know");
}

TEST_CASE("a hit and a full request that disagree are a mismatch naming the ranks") {
  Job job(3);
  uint32_t a = job.cache_put(allreduce("a"));
  job.negotiator.hit(0, hit(a));
  job.negotiator.hit(2, hit(a));
  job.negotiator.add(1, allreduce("a", {8}));
  auto ready = job.negotiator.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kError);
  CHECK(ready[0].error == "allreduce 'a': mismatched shapes: rank 0 [4], rank 1 [8], rank 2 [4]");
}

TEST_CASE("a cached name of a process set waits for its members only") {
  Job job(3);
  job.negotiator.add_process_set(1, {0, 2});
  Request in_set = allreduce("s");
  in_set.process_set = 1;
  uint32_t s = job.cache_put(in_set);
  job.negotiator.hit(0, hit(s));
  CHECK(job.negotiator.take_ready().empty());
  job.negotiator.hit(2, hit(s));
  auto ready = job.negotiator.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kExecute);
  CHECK(ready[0].process_set == 1);
  job.negotiator.hit(1, hit(s));
  ready = job.negotiator.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].error == "allreduce 's': rank 1 is not a member of process set 1");
}

TEST_CASE("joined ranks stand in for cached allreduces and fail cached broadcasts") {
  Job job(3);
  uint32_t a = job.cache_put(allreduce("a"));
  uint32_t b = job.cache_put(Request{.name = "b", .type = OpType::kBroadcast, .shape = {2}});
  job.negotiator.add(2, Request{.name = "join", .type = OpType::kJoin});
  job.negotiator.hit(0, hit(a));
  job.negotiator.hit(1, hit(a));
  job.negotiator.hit(0, hit(b));
  job.negotiator.hit(1, hit(b));
  auto ready = job.negotiator.take_ready();
  REQUIRE(ready.size() == 2);
  CHECK(ready[0].kind == Response::Kind::kExecute);
  CHECK(ready[0].names[0] == "a");
  CHECK(ready[0].rebind);  // the joined rank reduces a scratch buffer
  CHECK(ready[1].kind == Response::Kind::kError);
  CHECK(ready[1].error ==
        "broadcast 'b': broadcast cannot run while ranks [2] have joined: only allreduce of host "
        "tensors continues without them");
  // A joined rank's own hit is refused as its full request would be.
  job.negotiator.hit(2, hit(a));
  CHECK_THAT(job.negotiator.take_ready().at(0).error,
             Catch::Matchers::Contains("rank 2 submitted it after calling join()"));
}

TEST_CASE("the stall inspector names the rank that has not hit a cached name") {
  Job job(4);
  uint32_t a = job.cache_put(allreduce("a"));
  for (int rank : {0, 1, 3}) job.negotiator.hit(rank, hit(a));
  CHECK(job.negotiator.take_ready().empty());
  auto later = Negotiator::Clock::now() + std::chrono::seconds(10);
  CHECK(job.negotiator.stall_report(later, std::chrono::seconds(1)) ==
        "1 collective(s) submitted by some ranks have waited more than 1 s for the others. "
        "Missing: rank 2 has not submitted ['a'].");
  // Still counted by id: the late rank completes it.
  job.negotiator.hit(2, hit(a));
  CHECK(job.negotiator.take_ready().size() == 1);

  for (int rank : {0, 1, 3}) job.negotiator.hit(rank, hit(a));
  auto failed = job.negotiator.expire_stalled(later, std::chrono::seconds(1));
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].kind == Response::Kind::kStalled);
  CHECK(failed[0].not_submitted == std::vector<int64_t>{2});
  CHECK(job.negotiator.pending() == 0);
}

TEST_CASE("a cached name some rank can no longer submit fails when it shuts down") {
  Job job(3);
  uint32_t a = job.cache_put(allreduce("a"));
  job.negotiator.hit(0, hit(a));
  job.negotiator.hit(1, hit(a));
  job.negotiator.mark_shut_down(2);
  auto ready = job.negotiator.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kPeerLeft);
  CHECK(ready[0].error == "'a' cannot complete: rank 2 has shut down and will never submit it");
  CHECK(ready[0].not_submitted == std::vector<int64_t>{2});
}
