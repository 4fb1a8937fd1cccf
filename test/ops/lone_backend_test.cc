// The backend of a world of one: every collective is the identity, with the same argument checks
// as the real backends.
#include "ops/lone_backend.h"

#include <catch2/catch.hpp>
#include <vector>

#include "cohort/errors.h"
#include "collective_matrix.h"

using namespace cohort;
using cohort::ops::LoneBackend;
using namespace cohort::ops::testing;

TEST_CASE("lone backend alltoallv and reduce_scatter are copies") {
  LoneBackend lone;
  REQUIRE(check_alltoallv_matrix(lone, 5) == "");
  REQUIRE(check_alltoallv_matrix(lone, 5, 0) == "");  // nothing to move
  REQUIRE(check_reduce_scatter_matrix(lone, {6}) == "");
  REQUIRE(check_reduce_scatter_matrix(lone, {0}) == "");
}

TEST_CASE("lone backend splits into another lone backend") {
  LoneBackend lone;
  const int self[] = {0};
  auto sub = lone.split(self, "self");
  REQUIRE(sub->size() == 1);
  REQUIRE(sub->name() == "none");
  REQUIRE(check_reduce_scatter_matrix(*sub, {3}) == "");
}

TEST_CASE("lone backend rejects bad arguments") {
  LoneBackend lone;
  std::vector<float> in(4), out(4);
  std::vector<size_t> two = {1, 1}, one = {4};
  CHECK_THROWS_AS(lone.alltoallv(in.data(), two, out.data(), one), InvalidArgument);
  CHECK_THROWS_AS(
      lone.reduce_scatter(in.data(), out.data(), two, DataType::kFloat32, ReduceOp::kSum),
      InvalidArgument);
  CHECK_THROWS_AS(
      lone.reduce_scatter(in.data(), in.data(), one, DataType::kFloat32, ReduceOp::kSum),
      InvalidArgument);
  const int other[] = {1}, none[] = {-1};
  CHECK_THROWS_AS(lone.split(other, "x"), InvalidArgument);
  CHECK_THROWS_AS(lone.split(none, "x"), InvalidArgument);
  CHECK_THROWS_AS(lone.split(std::span<const int>(), "x"), InvalidArgument);
}
