// float16 and bfloat16 conversions: exhaustive round trips, rounding ties, subnormals, NaN, Inf.
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

TEST_CASE("float16 subnormals, infinities and NaN") {
  float tiny = std::ldexp(1.0f, -24);              // the smallest float16 subnormal
  CHECK(float_to_float16(tiny / 2) == 0x0000);     // a tie: rounds to even (zero)
  CHECK(float_to_float16(tiny * 1.5f) == 0x0002);  // a tie: rounds to even (2)
  CHECK(float_to_float16(tiny * 0.75f) == 0x0001);
  CHECK(float_to_float16(-tiny) == 0x8001);
  CHECK(float16_to_float(0x03ff) == std::ldexp(1023.0f, -24));  // the largest subnormal
  CHECK(float_to_float16(std::ldexp(1.0f, -14)) == 0x0400);     // the smallest normal
  CHECK(float_to_float16(-0.0f) == 0x8000);
  CHECK(float_to_float16(65519.0f) == 0x7bff);  // below the tie: the largest finite value
  CHECK(float_to_float16(65520.0f) == 0x7c00);  // the tie rounds to even, which is infinity
  CHECK(float_to_float16(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(float_to_float16(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(std::isinf(float16_to_float(0xfc00)));
  for (float nan :
       {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
        std::numeric_limits<float>::signaling_NaN()}) {
    uint16_t h = float_to_float16(nan);
    CHECK((h & 0x7c00) == 0x7c00);  // NaN, never infinity
    CHECK((h & 0x03ff) != 0);
    CHECK(std::isnan(float16_to_float(h)));
  }
}

TEST_CASE("bfloat16 ties, overflow, subnormals and signaling NaN") {
  CHECK(float_to_bfloat16(bits_to_float(0x3f808000)) == 0x3f80);          // tie, even below
  CHECK(float_to_bfloat16(bits_to_float(0x3f818000)) == 0x3f82);          // tie, even above
  CHECK(float_to_bfloat16(bits_to_float(0x3f808001)) == 0x3f81);          // just above the tie
  CHECK(float_to_bfloat16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds to infinity
  CHECK(float_to_bfloat16(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(float_to_bfloat16(bits_to_float(0x00008000)) == 0x0000);  // subnormal tie to even
  CHECK(float_to_bfloat16(bits_to_float(0x00018000)) == 0x0002);
  // A signaling NaN whose payload sits in the low bits must not round to infinity.
  uint16_t h = float_to_bfloat16(bits_to_float(0x7f800001));
  CHECK(std::isnan(bfloat16_to_float(h)));
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(-std::numeric_limits<float>::quiet_NaN()))));
}
