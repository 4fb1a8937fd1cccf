#include <catch2/catch.hpp>

#include "cohort/errors.h"
#include "core/request.h"

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
  list.requests = {r, Request{.name = "b", .type = OpType::kBarrier}};
  RequestList back = decode_request_list(encode(list));
  CHECK(back.shutdown);
  REQUIRE(back.requests.size() == 2);
  CHECK(back.requests[0] == r);
  CHECK(back.requests[1].name == "b");
}

TEST_CASE("response lists survive encoding") {
  ResponseList list;
  list.responses.push_back({.kind = Response::Kind::kError,
                            .type = OpType::kAllgather,
                            .names = {"x", "y"},
                            .error = "bad",
                            .first_dims = {1, 2, 3}});
  ResponseList back = decode_response_list(encode(list));
  REQUIRE(back.responses.size() == 1);
  CHECK(back.responses[0].names == std::vector<std::string>{"x", "y"});
  CHECK(back.responses[0].error == "bad");
  CHECK(back.responses[0].first_dims == std::vector<int64_t>{1, 2, 3});
  CHECK_FALSE(back.shutdown);
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
  bad_enum[1 + 4 + 4 + 6] = std::byte{200};  // the op type after shutdown, count, name
  CHECK_THROWS_WITH(decode_request_list(bad_enum), Catch::Matchers::Contains("bad op type"));
}
