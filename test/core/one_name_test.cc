// One user name pending in two process sets (core/negotiator_names.cc): when each set waits for a
// rank busy with the name in the other, both fail at once with the mismatch named; uses of one
// name in two sets that can complete go on as before. Also through the response cache.
#include <catch2/catch.hpp>

#include "core/negotiator.h"
#include "core/response_cache.h"

using namespace cohort;

namespace {

Request request(std::string name, int32_t set, OpType type = OpType::kAllreduce) {
  return Request{.name = std::move(name), .type = type, .shape = {4}, .process_set = set};
}

// Two sets of every rank of a world of three, as process sets added twice make.
void two_world_sets(Negotiator& n) {
  n.add_process_set(1, {0, 1, 2});
  n.add_process_set(2, {0, 1, 2});
}

void check_failed_together(const std::vector<Response>& ready, const std::string& error) {
  REQUIRE(ready.size() == 2);
  for (const auto& r : ready) {
    CHECK(r.kind == Response::Kind::kError);
    CHECK(r.names == std::vector<std::string>{"x"});
    CHECK(r.error == error);
  }
  CHECK(ready[0].not_submitted != ready[1].not_submitted);
}

}  // namespace

TEST_CASE("one name in two sets that wait for each other fails in both at once") {
  Negotiator n(3);
  two_world_sets(n);
  n.add(0, request("x", 1));
  n.add(1, request("x", 2));
  n.add(2, request("x", 2));
  auto ready = n.take_ready();
  check_failed_together(ready,
                        "allreduce 'x': mismatched process sets: rank 0 1, rank 1 2, rank 2 2");
  CHECK(ready[0].process_set + ready[1].process_set == 3);
  // The ranks that did not submit a key take nothing of its failure.
  for (const auto& r : ready) {
    CHECK(r.not_submitted ==
          (r.process_set == 1 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{0}));
  }
  CHECK(n.pending() == 0);
}

TEST_CASE("different operations under one name in two sets name the operations") {
  Negotiator n(3);
  n.add_process_set(1, {0, 1, 2});
  n.add(0, request("x", 0));
  n.add(1, request("x", 1, OpType::kBroadcast));
  n.add(2, request("x", 1, OpType::kBroadcast));
  check_failed_together(n.take_ready(),
                        "allreduce 'x': mismatched operations: rank 0 allreduce, "
                        "rank 1 broadcast, rank 2 broadcast");
}

TEST_CASE("one name in two sets stays legitimate while either can complete") {
  Negotiator n(3);
  n.add_process_set(1, {1, 2});
  n.add_process_set(2, {0});
  // Rank 0 waits in the world for ranks 1 and 2, which run the name in set 1 first.
  n.add(0, request("x", 0));
  n.add(1, request("x", 1));
  n.add(2, request("x", 1));
  auto ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kExecute);
  CHECK(ready[0].process_set == 1);
  n.add(1, request("x", 0));
  n.add(2, request("x", 0));
  ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kExecute);
  CHECK(ready[0].process_set == 0);
  // Disjoint sets: each has its own use of the name.
  n.add(1, request("y", 1));
  n.add(0, request("y", 2));
  ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].process_set == 2);
  n.add(2, request("y", 1));
  ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kExecute);
}

TEST_CASE("cached ids of one name in two sets do not hide that they wait for each other") {
  ResponseCache cache(8, 3);
  Negotiator n(3, &cache);
  two_world_sets(n);
  auto hit = [&](const Request& r) { return cache_id(cache.put(r)) << 1; };
  uint32_t in_1 = hit(request("x", 1));
  uint32_t in_2 = hit(request("x", 2));
  n.hit(0, in_1);
  n.hit(1, in_2);
  n.hit(2, in_2);
  check_failed_together(n.take_ready(),
                        "allreduce 'x': mismatched process sets: rank 0 1, rank 1 2, rank 2 2");
  // Afterwards the name runs in either set from the cache as before.
  for (int rank = 0; rank < 3; ++rank) n.hit(rank, in_1);
  auto ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kExecute);
}
