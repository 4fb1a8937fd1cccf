#include <catch2/catch.hpp>

#include "cohort/errors.h"
#include "core/negotiator.h"

using namespace cohort;

namespace {
Request allreduce(std::string name, Shape shape = {4}) {
  return Request{.name = std::move(name), .shape = std::move(shape)};
}
std::vector<std::string> names(const std::vector<Response>& responses) {
  std::vector<std::string> out;
  for (const auto& r : responses) out.push_back(r.names.at(0));
  return out;
}
}  // namespace

TEST_CASE("a name is ready once every rank submitted it in any order") {
  Negotiator n(2);
  n.add(0, allreduce("a"));
  n.add(0, allreduce("b"));
  n.add(0, allreduce("c"));
  n.add(1, allreduce("c"));
  n.add(1, allreduce("a"));
  CHECK(names(n.take_ready()) == std::vector<std::string>{"c", "a"});
  CHECK(n.take_ready().empty());
  n.add(1, allreduce("b"));
  auto ready = n.take_ready();
  CHECK(names(ready) == std::vector<std::string>{"b"});
  CHECK(ready[0].kind == Response::Kind::kExecute);
  CHECK(n.pending() == 0);
}

TEST_CASE("mismatches name the tensor and the ranks and the values") {
  Negotiator n(3);
  n.add(0, allreduce("w", {4, 3}));
  n.add(1, allreduce("w", {4, 3}));
  n.add(2, allreduce("w", {4, 2}));
  auto ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kError);
  CHECK(ready[0].error ==
        "allreduce 'w': mismatched shapes: rank 0 [4, 3], rank 1 [4, 3], rank 2 [4, 2]");

  Request bf = allreduce("d");
  bf.dtype = DataType::kBFloat16;
  n.add(0, allreduce("d"));
  n.add(1, bf);
  n.add(2, allreduce("d"));
  CHECK_THAT(n.take_ready().at(0).error, Catch::Matchers::Contains("rank 1 bfloat16"));

  Request b0{.name = "bc", .type = OpType::kBroadcast, .root = 0, .shape = {1}};
  Request b1 = b0;
  b1.root = 1;
  n.add(0, b0);
  n.add(1, b1);
  n.add(2, b0);
  CHECK(n.take_ready().at(0).error ==
        "broadcast 'bc': mismatched root ranks: rank 0 0, rank 1 1, rank 2 0");
}

TEST_CASE("different operations and reduce ops under one name are mismatches") {
  Negotiator n(2);
  Request a = allreduce("x");
  Request g{.name = "x", .type = OpType::kAllgather, .shape = {4}};
  n.add(0, a);
  n.add(1, g);
  CHECK_THAT(n.take_ready().at(0).error, Catch::Matchers::Contains("mismatched operations"));
  Request mx = allreduce("y");
  mx.reduce_op = ReduceOp::kMax;
  n.add(0, allreduce("y"));
  n.add(1, mx);
  CHECK_THAT(n.take_ready().at(0).error,
             Catch::Matchers::Contains("mismatched reduce ops: rank 0 sum, rank 1 max"));
}

TEST_CASE("allgather allows different first dimensions but not different rows") {
  Negotiator n(2);
  n.add(0, Request{.name = "g", .type = OpType::kAllgather, .shape = {2, 3}});
  n.add(1, Request{.name = "g", .type = OpType::kAllgather, .shape = {5, 3}});
  auto ready = n.take_ready();
  REQUIRE(ready.at(0).kind == Response::Kind::kExecute);
  CHECK(ready[0].first_dims == std::vector<int64_t>{2, 5});
  n.add(0, Request{.name = "h", .type = OpType::kAllgather, .shape = {2, 3}});
  n.add(1, Request{.name = "h", .type = OpType::kAllgather, .shape = {2, 4}});
  CHECK_THAT(n.take_ready().at(0).error,
             Catch::Matchers::Contains("shapes after the first dimension"));
}

TEST_CASE("names a shut-down rank never submitted fail instead of waiting forever") {
  Negotiator n(2);
  n.add(0, allreduce("late"));
  n.mark_shut_down(1);
  CHECK_FALSE(n.all_shut_down());
  auto ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  // The world is broken, not the request: InternalError, from which elastic::run recovers.
  CHECK(ready[0].kind == Response::Kind::kPeerLeft);
  CHECK_THAT(ready[0].error, Catch::Matchers::Contains("rank 1 has shut down"));
  n.mark_shut_down(0);
  CHECK(n.all_shut_down());
}

TEST_CASE("a duplicate submission from one rank is a protocol error") {
  Negotiator n(2);
  n.add(1, allreduce("a"));
  CHECK_THROWS_AS(n.add(1, allreduce("a")), InternalError);
}

TEST_CASE("the stall report names each missing rank and its tensors") {
  Negotiator n(3);
  n.add(0, allreduce("grad/w1"));
  n.add(2, allreduce("grad/w1"));
  n.add(1, allreduce("metrics"));
  auto now = Negotiator::Clock::now();
  CHECK(n.stall_report(now, std::chrono::seconds(60)).empty());
  std::string report = n.stall_report(now + std::chrono::seconds(61), std::chrono::seconds(60));
  CHECK_THAT(report, Catch::Matchers::StartsWith("2 collective(s)"));
  CHECK_THAT(report, Catch::Matchers::Contains("rank 1 has not submitted ['grad/w1']"));
  CHECK_THAT(report, Catch::Matchers::Contains("rank 0 has not submitted ['metrics']"));
  CHECK_THAT(report, Catch::Matchers::Contains("rank 2 has not submitted ['metrics']"));
}

TEST_CASE("the stall report lists a few names per rank") {
  Negotiator n(2);
  for (int i = 0; i < 8; ++i) n.add(0, allreduce("t" + std::to_string(i)));
  auto later = Negotiator::Clock::now() + std::chrono::seconds(2);
  CHECK_THAT(n.stall_report(later, std::chrono::seconds(1)),
             Catch::Matchers::Contains("'t4', and 3 more]"));
}

TEST_CASE("stalled names expire into errors for every rank and leave the table") {
  Negotiator n(2);
  n.add(0, allreduce("grad"));
  auto now = Negotiator::Clock::now();
  CHECK(n.expire_stalled(now, std::chrono::seconds(5)).empty());
  auto expired = n.expire_stalled(now + std::chrono::seconds(6), std::chrono::seconds(5));
  REQUIRE(expired.size() == 1);
  CHECK(expired[0].kind == Response::Kind::kStalled);
  CHECK(expired[0].error ==
        "'grad' stalled: submitted by ranks [0] but not by ranks [1] for more than 5 s "
        "(COHORT_STALL_SHUTDOWN_TIME_SECONDS)");
  CHECK(n.pending() == 0);
}

namespace {
Request group(std::string name, std::vector<Shape> shapes) {
  Request r{.name = std::move(name)};
  for (auto& shape : shapes) r.group.add(DataType::kFloat32, shape);
  return r;
}
}  // namespace

TEST_CASE("a grouped allreduce is one entry and one response with each member's count") {
  Negotiator n(2);
  n.add(0, group("g", {{4}, {2, 3}, {}}));
  n.add(0, allreduce("x"));
  n.add(1, allreduce("x"));
  CHECK(names(n.take_ready()) == std::vector<std::string>{"x"});  // g waits for rank 1
  CHECK(n.pending() == 1);
  n.add(1, group("g", {{4}, {2, 3}, {}}));
  auto ready = n.take_ready(1 << 20);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].names == std::vector<std::string>{"g"});
  CHECK(ready[0].counts == std::vector<int64_t>{4, 6, 1});
  CHECK(ready[0].parts == std::vector<int64_t>{3});
  CHECK(ready[0].batches.empty());  // one batch of float32: the default
}

TEST_CASE("a group's mismatch names the member, the ranks and the values") {
  Negotiator n(3);
  n.add(0, group("g", {{4}, {2, 3}, {5}}));
  n.add(1, group("g", {{4}, {2, 3}, {5}}));
  n.add(2, group("g", {{4}, {3, 2}, {5}}));
  auto ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kError);
  CHECK(ready[0].error ==
        "allreduce 'g': member 1: mismatched shapes: rank 0 [2, 3], rank 1 [2, 3], rank 2 [3, 2]");

  Request ints{.name = "h", .group = {{DataType::kFloat32, {4}}, {DataType::kInt32, {4}}}};
  n.add(0, group("h", {{4}, {4}}));
  n.add(1, group("h", {{4}, {4}}));
  n.add(2, ints);
  CHECK(n.take_ready().at(0).error ==
        "allreduce 'h': member 1: mismatched data types: rank 0 float32, rank 1 float32, "
        "rank 2 int32");

  n.add(0, group("k", {{4}, {4}}));
  n.add(1, group("k", {{4}}));
  n.add(2, allreduce("k"));
  CHECK(n.take_ready().at(0).error ==
        "allreduce 'k': mismatched group sizes (0: not a group): rank 0 2, rank 1 1, rank 2 0");
}

TEST_CASE("a group runs without a joined rank and stalls under its own name") {
  Negotiator n(3);
  n.add(2, Request{.name = "cohort.join", .type = OpType::kJoin});
  n.add(0, group("g", {{4}, {2}}));
  auto start = Negotiator::Clock::now();
  CHECK(n.take_ready().empty());
  CHECK_THAT(n.stall_report(start + std::chrono::seconds(10), std::chrono::seconds(5)),
             Catch::Matchers::EndsWith("rank 1 has not submitted ['cohort.join', 'g']."));
  n.add(1, group("g", {{4}, {2}}));
  auto ready = n.take_ready();
  REQUIRE(names(ready) == std::vector<std::string>{"g"});
  CHECK(ready[0].kind == Response::Kind::kExecute);
  CHECK(ready[0].counts == std::vector<int64_t>{4, 2});
  CHECK(ready[0].rebind);  // rank 2 reduces a scratch buffer
}

TEST_CASE("joined ranks let allreduces run and fail everything else") {
  Negotiator n(3);
  Request join{.name = "cohort.join", .type = OpType::kJoin};
  n.add(0, allreduce("a"));
  n.add(1, allreduce("a"));
  n.add(2, join);
  auto ready = n.take_ready();
  REQUIRE(names(ready) == std::vector<std::string>{"a"});
  CHECK(ready[0].kind == Response::Kind::kExecute);
  CHECK(ready[0].rebind);  // rank 2 reduces a scratch buffer

  Request gather{.name = "g", .type = OpType::kAllgather, .shape = {1}};
  n.add(0, gather);
  n.add(1, gather);
  ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kError);
  CHECK_THAT(ready[0].error, Catch::Matchers::Contains("cannot run while ranks [2] have joined"));

  n.add(2, allreduce("late"));  // a joined rank may submit nothing but its join
  ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK_THAT(ready[0].error, Catch::Matchers::Contains("after calling join()"));

  n.add(1, join);
  CHECK(n.take_ready().empty());
  n.add(0, join);
  ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].type == OpType::kJoin);
  CHECK(ready[0].last_joined == 0);
  // After the join completes nobody is joined any more.
  n.add(0, allreduce("b"));
  n.add(1, allreduce("b"));
  CHECK(n.take_ready().empty());
}

TEST_CASE("process sets negotiate among their members only") {
  Negotiator n(3);
  n.add_process_set(1, {0, 2});
  Request r = allreduce("s");
  r.process_set = 1;
  n.add(0, r);
  CHECK(n.take_ready().empty());
  n.add(2, r);
  auto ready = n.take_ready();
  REQUIRE(names(ready) == std::vector<std::string>{"s"});
  CHECK(ready[0].process_set == 1);

  n.add(1, r);  // rank 1 is not a member
  ready = n.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK_THAT(ready[0].error, Catch::Matchers::Contains("rank 1 is not a member of process set 1"));

  Request unknown = allreduce("u");
  unknown.process_set = 7;
  n.add(0, unknown);
  CHECK_THAT(n.take_ready().at(0).error, Catch::Matchers::Contains("process set 7 does not exist"));
}

TEST_CASE("readiness counts members and joined ranks, never ranks outside the set") {
  Negotiator n(4);
  n.add_process_set(1, {0, 1, 2});
  Request join{.name = "cohort.join", .type = OpType::kJoin};
  n.add(3, join);  // joined, but no member of set 1: set 1 still needs all three
  Request a{.name = "a", .shape = {4}, .process_set = 1};
  n.add(0, a);
  n.add(1, a);
  CHECK(n.take_ready().empty());
  n.add(2, a);
  CHECK(names(n.take_ready()) == std::vector<std::string>{"a"});

  n.add(0, allreduce("w"));  // the world's: rank 3's join stands in for it
  n.add(1, allreduce("w"));
  CHECK(n.take_ready().empty());
  n.add(2, allreduce("w"));
  CHECK(names(n.take_ready()) == std::vector<std::string>{"w"});

  for (int rank : {0, 1, 2}) n.add(rank, join);
  CHECK(names(n.take_ready()) == std::vector<std::string>{"cohort.join"});
  for (int rank : {0, 1, 2}) n.add(rank, allreduce("after"));  // nobody has joined any more
  CHECK(n.take_ready().empty());
  n.add(3, allreduce("after"));
  CHECK(names(n.take_ready()) == std::vector<std::string>{"after"});
}
