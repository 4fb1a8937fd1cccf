// Removing a process set in rank 0's negotiator: ordering against the set's collectives, what
// happens to those still waiting, and that a removed id stays an error rather than being reused.
#include <catch2/catch.hpp>

#include "core/negotiator.h"

using namespace cohort;

namespace {

Request in_set(std::string name, int set) {
  return Request{.name = std::move(name), .shape = {4}, .process_set = set};
}

Request add_set(std::vector<int64_t> members) {
  return Request{.name = "cohort.add_process_set",
                 .type = OpType::kAddProcessSet,
                 .members = std::move(members)};
}

Request remove_set(int id) {
  return Request{
      .name = "cohort.remove_process_set", .type = OpType::kRemoveProcessSet, .members = {id}};
}

const Response& named(const std::vector<Response>& responses, const std::string& name) {
  for (const auto& r : responses) {
    if (r.names.at(0) == name) return r;
  }
  FAIL("no response for " << name);
  return responses.front();
}

// A world of 3 with process set 1 over ranks 0 and 2, added by negotiation.
Negotiator with_set() {
  Negotiator n(3);
  for (int rank = 0; rank < 3; ++rank) n.add(rank, add_set({0, 2}));
  auto ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  REQUIRE(ready[0].process_set == 1);
  return n;
}

}  // namespace

TEST_CASE("removing a process set runs what its members all submitted and fails the rest") {
  Negotiator n = with_set();
  n.add(0, in_set("done", 1));
  n.add(2, in_set("done", 1));
  n.add(0, in_set("half", 1));  // rank 2 never submits it
  for (int rank = 0; rank < 3; ++rank) n.add(rank, remove_set(1));
  auto ready = n.take_ready();
  REQUIRE(ready.size() == 3);
  CHECK(ready[0].names.at(0) == "done");
  CHECK(ready[0].kind == Response::Kind::kExecute);
  CHECK(ready[1].type == OpType::kRemoveProcessSet);
  CHECK(ready[1].kind == Response::Kind::kExecute);
  const Response& half = named(ready, "half");
  CHECK(half.kind == Response::Kind::kError);
  CHECK(half.process_set == 1);
  CHECK(half.error ==
        "'half' (process set 1) cannot complete: process set 1 was removed "
        "(remove_process_set) while submitted by ranks [0] but not by ranks [2]");
  CHECK(n.pending() == 0);
}

TEST_CASE("a removed process set's id is refused and never reused") {
  Negotiator n = with_set();
  for (int rank = 0; rank < 3; ++rank) n.add(rank, remove_set(1));
  REQUIRE(n.take_ready().at(0).kind == Response::Kind::kExecute);

  n.add(0, in_set("late", 1));
  auto ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].error == "allreduce 'late': process set 1 was removed (remove_process_set)");

  for (int rank = 0; rank < 3; ++rank) n.add(rank, add_set({0, 2}));
  ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].process_set == 2);

  for (int rank = 0; rank < 3; ++rank) n.add(rank, remove_set(1));
  CHECK(n.take_ready().at(0).error ==
        "remove_process_set 'cohort.remove_process_set': process set 1 was already removed");
}

TEST_CASE("removing the global set or different sets on different ranks fails on every rank") {
  Negotiator n = with_set();
  for (int rank = 0; rank < 3; ++rank) n.add(rank, remove_set(0));
  CHECK(n.take_ready().at(0).error ==
        "remove_process_set 'cohort.remove_process_set': the global process set (id 0) cannot "
        "be removed");

  n.add(0, remove_set(1));
  n.add(1, remove_set(1));
  n.add(2, remove_set(7));
  CHECK(n.take_ready().at(0).error ==
        "remove_process_set 'cohort.remove_process_set': mismatched process sets to remove: "
        "rank 0 [1], rank 1 [1], rank 2 [7]");
  // The set is still there.
  n.add(0, in_set("after", 1));
  n.add(2, in_set("after", 1));
  CHECK(n.take_ready().at(0).kind == Response::Kind::kExecute);
}
