#include <catch2/catch.hpp>

#include "core/fusion.h"

using namespace cohort;

namespace {

ReadyResponse allreduce(std::string name, int64_t floats, DataType dtype = DataType::kFloat32,
                        bool rebind = false) {
  Request r{.name = name, .dtype = dtype, .shape = {floats}};
  Response response{.names = {name}};
  response.rebind = rebind;
  return {response, r};
}

std::vector<std::vector<std::string>> groups(const std::vector<Response>& responses) {
  std::vector<std::vector<std::string>> out;
  for (const auto& r : responses) out.push_back(r.names);
  return out;
}

}  // namespace

TEST_CASE("allreduces of one kind are fused up to the threshold with look-ahead") {
  std::vector<ReadyResponse> ready = {
      allreduce("a", 10),                      // 40 bytes
      allreduce("d", 10, DataType::kFloat64),  // other dtype: its own group
      allreduce("b", 20),                      // 80 bytes
      allreduce("big", 100),                   // 400 bytes: does not fit with a and b
      allreduce("c", 5),                       // fits after looking past "big"
  };
  Response bcast{.type = OpType::kBroadcast, .names = {"w"}};
  ready.insert(ready.begin() + 1,
               ReadyResponse{bcast, Request{.name = "w", .type = OpType::kBroadcast}});
  auto out = fuse_responses(ready, 200);
  CHECK(groups(out) ==
        std::vector<std::vector<std::string>>{{"a", "b", "c"}, {"w"}, {"d"}, {"big"}});
}

TEST_CASE("different reduce ops or scale factors are never fused") {
  auto avg = allreduce("avg", 4);
  avg.description.reduce_op = ReduceOp::kAverage;
  auto scaled = allreduce("scaled", 4);
  scaled.description.postscale = 0.5;
  auto out = fuse_responses({allreduce("sum", 4), avg, scaled, allreduce("sum2", 4)}, 1 << 20);
  CHECK(groups(out) == std::vector<std::vector<std::string>>{{"sum", "sum2"}, {"avg"}, {"scaled"}});
}

TEST_CASE("errors are not fused and a zero threshold turns fusion off") {
  auto failed = allreduce("bad", 4);
  failed.response.kind = Response::Kind::kError;
  auto out = fuse_responses({allreduce("x", 4), failed, allreduce("y", 4)}, 1 << 20);
  CHECK(groups(out) == std::vector<std::vector<std::string>>{{"x", "y"}, {"bad"}});
  auto off = fuse_responses({allreduce("x", 4), allreduce("y", 4)}, 0);
  CHECK(groups(off) == std::vector<std::vector<std::string>>{{"x"}, {"y"}});
}

TEST_CASE("a fused group rebinds when any member does") {
  auto out = fuse_responses({allreduce("x", 4), allreduce("y", 4, DataType::kFloat32, true)}, 64);
  REQUIRE(out.size() == 1);
  CHECK(out[0].rebind);
}
