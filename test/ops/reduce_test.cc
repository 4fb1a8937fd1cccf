// reduce_into and scale against scalar references, on lengths that exercise vector tails.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "cohort/errors.h"
#include "ops/half.h"
#include "ops/reduce.h"

using namespace cohort;
using namespace cohort::ops;

namespace {

template <typename T>
T reference(T a, T b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return static_cast<T>(a + b);
    case ReduceOp::kProduct:
      return static_cast<T>(a * b);
    case ReduceOp::kMin:
      return std::min(a, b);
    case ReduceOp::kMax:
      return std::max(a, b);
    default:
      return a;
  }
}

template <typename T>
void check_type(DataType dtype) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax}) {
    for (size_t n : {0, 1, 7, 33, 1000}) {
      std::vector<T> dst(n), src(n), want(n);
      for (size_t i = 0; i < n; ++i) {
        dst[i] = static_cast<T>(static_cast<int>(i % 7) - 3);
        src[i] = static_cast<T>(static_cast<int>(i % 5) - 1);
        want[i] = reference(dst[i], src[i], op);
      }
      reduce_into(dst.data(), src.data(), n, dtype, op);
      INFO(to_string(dtype) << " " << to_string(op) << " n=" << n);
      CHECK(dst == want);
    }
  }
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void check_half(DataType dtype) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax}) {
    for (size_t n : {0, 1, 7, 33, 1000}) {  // 1000 is longer than one conversion block
      std::vector<uint16_t> dst(n), src(n);
      std::vector<float> a(n), b(n);
      for (size_t i = 0; i < n; ++i) {
        a[i] = static_cast<float>(i % 9) * 0.5f - 2;
        b[i] = static_cast<float>(i % 4) - 1.5f;
        dst[i] = FromFloat(a[i]);
        src[i] = FromFloat(b[i]);
      }
      reduce_into(dst.data(), src.data(), n, dtype, op);
      for (size_t i = 0; i < n; ++i) {
        INFO(to_string(dtype) << " " << to_string(op) << " at " << i);
        REQUIRE(dst[i] == FromFloat(reference(a[i], b[i], op)));
      }
    }
  }
}

}  // namespace

TEST_CASE("reductions match a scalar reference for every type and operation") {
  check_type<uint8_t>(DataType::kUInt8);
  check_type<int8_t>(DataType::kInt8);
  check_type<int32_t>(DataType::kInt32);
  check_type<int64_t>(DataType::kInt64);
  check_type<float>(DataType::kFloat32);
  check_type<double>(DataType::kFloat64);
  check_half<float16_to_float, float_to_float16>(DataType::kFloat16);
  check_half<bfloat16_to_float, float_to_bfloat16>(DataType::kBFloat16);
}

TEST_CASE("bool reductions are logical") {
  uint8_t a[4] = {0, 0, 1, 1}, b[4] = {0, 1, 0, 1};
  auto run = [&](ReduceOp op) {
    std::vector<uint8_t> dst(a, a + 4);
    reduce_into(dst.data(), b, 4, DataType::kBool, op);
    return dst;
  };
  CHECK(run(ReduceOp::kSum) == std::vector<uint8_t>{0, 1, 1, 1});
  CHECK(run(ReduceOp::kMax) == std::vector<uint8_t>{0, 1, 1, 1});
  CHECK(run(ReduceOp::kProduct) == std::vector<uint8_t>{0, 0, 0, 1});
  CHECK(run(ReduceOp::kMin) == std::vector<uint8_t>{0, 0, 0, 1});
}

TEST_CASE("integer sums and products wrap around") {
  int8_t dst = 127, src = 1;
  reduce_into(&dst, &src, 1, DataType::kInt8, ReduceOp::kSum);
  CHECK(dst == -128);
  int64_t big = INT64_MAX, one = 1;
  reduce_into(&big, &one, 1, DataType::kInt64, ReduceOp::kSum);
  CHECK(big == INT64_MIN);
  int32_t p = 65536, q = 65537;
  reduce_into(&p, &q, 1, DataType::kInt32, ReduceOp::kProduct);
  CHECK(p == 65536);  // 2^32 + 2^16 wraps to 2^16
  uint8_t u = 16, v = 17;
  reduce_into(&u, &v, 1, DataType::kUInt8, ReduceOp::kProduct);
  CHECK(u == 16);  // 272 mod 256
}

TEST_CASE("average is not an elementwise reduction") {
  float x = 1, y = 2;
  CHECK_THROWS_AS(reduce_into(&x, &y, 1, DataType::kFloat32, ReduceOp::kAverage), InvalidArgument);
}

TEST_CASE("scaling truncates integers toward zero and saturates and rejects bool") {
  int32_t ints[3] = {3, -3, 2000000000};
  scale(ints, 3, DataType::kInt32, 0.5);
  CHECK(ints[0] == 1);  // 1.5 truncates, as Horovod's
  CHECK(ints[1] == -1);
  CHECK(ints[2] == 1000000000);
  uint8_t bytes[1] = {200};
  scale(bytes, 1, DataType::kUInt8, 2.0);
  CHECK(bytes[0] == 255);
  int64_t big[1] = {INT64_MAX / 2};
  scale(big, 1, DataType::kInt64, 4.0);
  CHECK(big[0] == INT64_MAX);
  uint16_t h[1] = {float_to_float16(3.0f)};
  scale(h, 1, DataType::kFloat16, 0.5);
  CHECK(float16_to_float(h[0]) == 1.5f);
  double d[1] = {3};
  scale(d, 1, DataType::kFloat64, 1.0 / 3);
  CHECK(d[0] == Approx(1.0));
  bool flags[1] = {true};
  CHECK_THROWS_AS(scale(flags, 1, DataType::kBool, 2.0), InvalidArgument);
}

TEST_CASE("scale every type") {
  uint8_t u8[3] = {3, 200, 7};
  scale(u8, 3, DataType::kUInt8, 0.5);
  CHECK(std::vector<uint8_t>(u8, u8 + 3) == std::vector<uint8_t>{1, 100, 3});  // truncated
  scale(u8, 3, DataType::kUInt8, -1.0);
  CHECK(u8[1] == 0);  // saturates at the bottom
  int8_t i8[3] = {-3, 100, -100};
  scale(i8, 3, DataType::kInt8, 2.0);
  CHECK(std::vector<int8_t>(i8, i8 + 3) == std::vector<int8_t>{-6, 127, -128});
  int32_t i32[2] = {7, -2000000000};
  scale(i32, 2, DataType::kInt32, 1.5);
  CHECK(i32[0] == 10);  // 10.5 truncates
  CHECK(i32[1] == INT32_MIN);
  int64_t i64[2] = {1003, INT64_MIN / 2};
  scale(i64, 1, DataType::kInt64, 0.25);
  CHECK(i64[0] == 250);  // 250.75 truncates
  scale(i64 + 1, 1, DataType::kInt64, 3.0);
  CHECK(i64[1] == INT64_MIN);
  uint16_t bf[1] = {float_to_bfloat16(3.0f)};
  scale(bf, 1, DataType::kBFloat16, 0.25);
  CHECK(bfloat16_to_float(bf[0]) == 0.75f);
  float f[2] = {3.0f, -1.0f};
  scale(f, 2, DataType::kFloat32, 0.5);
  CHECK(f[0] == 1.5f);
  CHECK(f[1] == -0.5f);
  // float16 overflows to infinity rather than saturating, like any float.
  uint16_t h[1] = {float_to_float16(60000.0f)};
  scale(h, 1, DataType::kFloat16, 2.0);
  CHECK(h[0] == 0x7c00);
  // Long enough to run the vectorized body and its tail.
  std::vector<double> d(1003, 2.0);
  scale(d.data(), d.size(), DataType::kFloat64, 0.5);
  CHECK(d.front() == 1.0);
  CHECK(d.back() == 1.0);
}
