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

namespace {
ReadyResponse grouped(std::string name, GroupSpec tensors) {
  Request r{.name = name, .dtype = tensors.dtype(0), .group = std::move(tensors)};
  return {Response{.names = {name}, .dtype = r.dtype}, r};
}
}  // namespace

TEST_CASE("a group fuses with other allreduces as a whole, its counts and parts in order") {
  auto out = fuse_responses(
      {allreduce("a", 10), grouped("g", {{DataType::kFloat32, {2, 3}}, {DataType::kFloat32, {4}}}),
       allreduce("b", 5)},
      1 << 20);
  REQUIRE(groups(out) == std::vector<std::vector<std::string>>{{"a", "g", "b"}});
  CHECK(out[0].counts == std::vector<int64_t>{10, 6, 4, 5});
  CHECK(out[0].parts == std::vector<int64_t>{1, 2, 1});
  CHECK(out[0].batches.empty());  // one batch of float32

  // Too large to join "a" under 64 bytes: alone, and cut into batches of at most 64 bytes.
  auto big = grouped("big", {{DataType::kFloat32, {8}},
                             {DataType::kFloat32, {8}},
                             {DataType::kFloat32, {20}},
                             {DataType::kFloat32, {1}}});
  out = fuse_responses({allreduce("a", 4), big}, 64);
  REQUIRE(groups(out) == std::vector<std::vector<std::string>>{{"a"}, {"big"}});
  using B = Response::Batch;
  CHECK(out[1].batches ==
        std::vector<B>{{2, DataType::kFloat32}, {1, DataType::kFloat32}, {1, DataType::kFloat32}});
}

TEST_CASE("a group of several types is cut where the type changes, and per tensor without fusion") {
  auto mixed = grouped("m", {{DataType::kFloat32, {4}},
                             {DataType::kFloat32, {4}},
                             {DataType::kInt32, {4}},
                             {DataType::kFloat32, {4}}});
  using B = Response::Batch;
  auto out = fuse_responses({mixed}, 1 << 20);
  REQUIRE(out.size() == 1);
  CHECK(out[0].batches ==
        std::vector<B>{{2, DataType::kFloat32}, {1, DataType::kInt32}, {1, DataType::kFloat32}});
  out = fuse_responses({mixed}, 0);
  CHECK(out[0].batches.size() == 4);
  CHECK(out[0].counts == std::vector<int64_t>{4, 4, 4, 4});

  auto device = grouped("d", {{DataType::kFloat32, {4}}, {DataType::kFloat32, {4}}});
  device.description.device = 0;  // device tensors are never packed into the host buffer
  out = fuse_responses({allreduce("a", 4), device}, 1 << 20);
  REQUIRE(groups(out) == std::vector<std::vector<std::string>>{{"a"}, {"d"}});
  CHECK(out[1].batches == std::vector<B>{{1, DataType::kFloat32}, {1, DataType::kFloat32}});
}
