#include <catch2/catch.hpp>

#include "cohort/errors.h"
#include "core/request.h"
#include "core/response_cache.h"

using namespace cohort;

TEST_CASE("request lists survive encoding") {
  RequestList list;
  list.shutdown = true;
  Request r{.name = "grad/layer1",
            .type = OpType::kAllreduce,
            .dtype = DataType::kBFloat16,
            .reduce_op = ReduceOp::kMax,
            .root = 3,
            .prescale = 0.5,
            .postscale = 2.0,
            .shape = {4, 5, 6}};
  Request group{
      .name = "grads",
      .group = {{DataType::kFloat32, {2, 3}}, {DataType::kInt64, {}}, {DataType::kBool, {7}}}};
  list.requests = {r, Request{.name = "b", .type = OpType::kBarrier}, group};
  RequestList back = decode_request_list(encode(list));
  CHECK(back.shutdown);
  REQUIRE(back.requests.size() == 3);
  CHECK(back.requests[0] == r);
  CHECK(back.requests[1].name == "b");
  CHECK(back.requests[2] == group);
}

TEST_CASE("response lists survive encoding") {
  ResponseList list;
  list.responses.push_back({.kind = Response::Kind::kError,
                            .type = OpType::kAllgather,
                            .names = {"x", "y"},
                            .error = "bad",
                            .first_dims = {1, 2, 3}});
  Response fused{.names = {"g", "z"}, .dtype = DataType::kFloat64, .counts = {1, 2, 3}};
  fused.parts = {2, 1};
  fused.batches = {{1, DataType::kFloat64}, {2, DataType::kInt8}};
  list.responses.push_back(fused);
  Response stalled{.kind = Response::Kind::kStalled, .names = {"s"}, .error = "stalled"};
  stalled.not_submitted = {0, 2};
  list.responses.push_back(stalled);
  ResponseList back = decode_response_list(encode(list));
  REQUIRE(back.responses.size() == 3);
  CHECK(back.responses[2].not_submitted == std::vector<int64_t>{0, 2});
  CHECK(back.responses[0].not_submitted.empty());
  CHECK(back.responses[0].names == std::vector<std::string>{"x", "y"});
  CHECK(back.responses[0].error == "bad");
  CHECK(back.responses[0].first_dims == std::vector<int64_t>{1, 2, 3});
  CHECK(back.responses[1].counts == fused.counts);
  CHECK(back.responses[1].parts == fused.parts);
  CHECK(back.responses[1].batches == fused.batches);
  CHECK_FALSE(back.shutdown);
}

TEST_CASE("a corrupt group raises instead of allocating or reading out of bounds") {
  RequestList list;
  list.requests.push_back(Request{.name = "g", .group = {{DataType::kFloat32, {4}}}});
  auto bytes = encode(list);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    std::vector<std::byte> truncated(bytes.begin(), bytes.begin() + cut);
    CHECK_THROWS_AS(decode_request_list(truncated), InternalError);
  }
  // The group: its tensors' dimension counts (one: 1), dimensions (one: 4) and types (one), then
  // the empty splits and members. More dimensions claimed than sent:
  size_t ranks_at = bytes.size() - 8 - 8 - 1 - (8 + 8) - (8 + 4);
  REQUIRE(bytes[ranks_at] == std::byte{1});
  auto bad_ranks = bytes;
  bad_ranks[ranks_at + 8] = std::byte{2};
  CHECK_THROWS_WITH(decode_request_list(bad_ranks), Catch::Matchers::Contains("dimensions"));
  auto huge_count = bytes;
  huge_count[ranks_at + 3] = std::byte{0x7f};  // 2^30 tensors claimed, one present
  CHECK_THROWS_AS(decode_request_list(huge_count), InternalError);
}

TEST_CASE("corrupt messages raise instead of reading out of bounds") {
  RequestList list;
  list.requests.push_back(Request{.name = "tensor", .shape = {1, 2}});
  auto bytes = encode(list);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    std::vector<std::byte> truncated(bytes.begin(), bytes.begin() + cut);
    CHECK_THROWS_AS(decode_request_list(truncated), InternalError);
  }
  auto trailing = bytes;
  trailing.push_back(std::byte{0});
  CHECK_THROWS_AS(decode_request_list(trailing), InternalError);
  auto bad_enum = bytes;
  // The op type after the format, shutdown, applied, no hit runs, count (varints), name.
  bad_enum[1 + 1 + 1 + 1 + 1 + 8 + 6] = std::byte{200};
  CHECK_THROWS_WITH(decode_request_list(bad_enum), Catch::Matchers::Contains("bad op type"));
}

TEST_CASE("cached names travel as ids and resolve through the cache view") {
  ResponseCache cache(2, 2);
  CacheView view;
  Request a{.name = "a", .shape = {4}};
  view.sent_in_full(a);
  uint32_t wire = cache.put(a);
  REQUIRE(introduces(wire));
  ResponseList list;
  list.responses.push_back({.names = {"a"}, .cache_ids = {wire}, .counts = {4}});
  ResponseList back = decode_response_list(encode(list));
  view.apply(back);
  REQUIRE(view.hit(a) == cache_id(wire));
  CHECK(*cache.find(cache_id(wire)) == Request{.name = "a", .shape = {4}, .buffer_changed = false});

  // Known ids travel without their name and are resolved by the view.
  uint32_t again = cache.put(a);
  CHECK(again == cache_id(wire));
  list.responses[0].cache_ids = {again};
  auto bytes = encode(list);
  back = decode_response_list(bytes);
  CHECK(back.responses[0].names[0].empty());
  CHECK(back.responses[0].counts.empty());  // the view learned them with the id
  view.apply(back);
  CHECK(back.responses[0].names[0] == "a");
  CHECK(back.responses[0].counts == std::vector<int64_t>{4});
  CHECK(bytes.size() < encode(ResponseList{.responses = {{.names = {"a"}}}}).size() + 1);

  // Other parameters under the same name are a miss, and never reuse the old id.
  Request a8 = a;
  a8.shape = {8};
  CHECK_FALSE(view.hit(a8));
  uint32_t other = cache.put(a8);
  CHECK(cache_id(other) != cache_id(wire));
  CHECK(cache.take_evicted() == std::vector<uint32_t>{cache_id(wire)});
  // The evicted id still resolves until every rank has applied the list that evicted it.
  CHECK(cache.find(cache_id(wire)) != nullptr);
  cache.sent(1);  // the list announcing the eviction
  cache.acknowledge(1, 0);
  CHECK(cache.find(cache_id(wire)) != nullptr);
  cache.acknowledge(1, 1);
  CHECK(cache.find(cache_id(wire)) == nullptr);
}

TEST_CASE("the cache evicts the least recently used entry and can be turned off") {
  ResponseCache cache(2, 2);
  auto a = cache_id(cache.put(Request{.name = "a"}));
  auto b = cache_id(cache.put(Request{.name = "b"}));
  cache.put(Request{.name = "a"});  // a is now the most recently used
  cache.put(Request{.name = "c"});
  CHECK(cache.take_evicted() == std::vector<uint32_t>{b});
  CHECK(cache.find(a) != nullptr);
  CHECK(ResponseCache(0, 2).put(Request{.name = "a"}) == 0);
  CHECK(ResponseCache(4, 2).put(Request{.name = "g", .type = OpType::kAllgather}) == 0);
}

TEST_CASE("a worker's cache hit stands on rank 0 for the request it replaced") {
  ResponseCache cache(4, 2);
  CacheView view;
  Request a{.name = "a", .shape = {4}};
  RequestList first{.applied = view.applied()};
  view.add(first, Request(a));
  REQUIRE(first.requests.size() == 1);
  CHECK(first.hits.empty());
  CHECK(first.applied == 0);
  ResponseList introduced{.responses = {{.names = {"a"}, .cache_ids = {cache.put(a)}}}};
  cache.sending(introduced);
  ResponseList back = decode_response_list(encode(introduced));
  view.apply(back);
  CHECK(view.applied() == 1);

  // Only the id and whether the buffer changed travel; rank 0 restores the rest.
  for (bool changed : {false, true}) {
    Request again = a;
    again.buffer_changed = changed;
    RequestList list;
    view.add(list, Request(again));
    CHECK(list.requests.empty());
    RequestList arrived = decode_request_list(encode(list));
    REQUIRE(arrived.hits.size() == 1);
    // The wire format: the id (1) shifted left, the lowest bit the buffer's change.
    CHECK(arrived.hits[0] == (changed ? 3u : 2u));
    CHECK(cache.request_for(arrived.hits[0]) == again);
  }
  CHECK_THROWS_MATCHES(ResponseCache(4, 2).request_for(2), InternalError,
                       Catch::Matchers::Message("a rank referred to cached tensor id 1, which rank "
                                                "0 does not know"));
}

TEST_CASE("each response list rank 0 sends announces the evictions since the last") {
  ResponseCache cache(1, 2);
  uint32_t a = cache_id(cache.put(Request{.name = "a"}));
  ResponseList first;
  cache.sending(first);  // list 1
  CHECK(first.evicted.empty());
  cache.put(Request{.name = "b"});  // evicts a
  ResponseList second;
  cache.sending(second);  // list 2
  CHECK(second.evicted == std::vector<uint32_t>{a});
  cache.acknowledge(1, 1);
  CHECK(cache.find(a) != nullptr);  // rank 1 may still send a's id
  cache.acknowledge(1, 2);
  CHECK(cache.find(a) == nullptr);
  ResponseList third;
  cache.sending(third);
  CHECK(third.evicted.empty());
}
