#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "ops/half.h"

using namespace cohort::ops;

TEST_CASE("every float16 value survives a round trip through float") {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    auto h = static_cast<uint16_t>(bits);
    float f = float16_to_float(h);
    bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    if (nan) {
      REQUIRE(std::isnan(f));
      REQUIRE(std::isnan(float16_to_float(float_to_float16(f))));
    } else {
      REQUIRE(float_to_float16(f) == h);
    }
  }
}

TEST_CASE("float16 known values and rounding") {
  CHECK(float_to_float16(1.0f) == 0x3c00);
  CHECK(float_to_float16(-2.0f) == 0xc000);
  CHECK(float_to_float16(65504.0f) == 0x7bff);
  CHECK(float_to_float16(1e6f) == 0x7c00);                   // overflow to infinity
  CHECK(float16_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to even (1.0).
  CHECK(float_to_float16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(float_to_float16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
}

TEST_CASE("bfloat16 conversion rounds to nearest even and keeps NaN") {
  CHECK(float_to_bfloat16(1.0f) == 0x3f80);
  CHECK(bfloat16_to_float(0x3f80) == 1.0f);
  // 1 + 2^-8 is halfway between two bfloat16 values: ties to even.
  CHECK(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  CHECK(float_to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    auto h = static_cast<uint16_t>(bits);
    float f = bfloat16_to_float(h);
    if (!std::isnan(f)) REQUIRE(float_to_bfloat16(f) == h);
  }
}
