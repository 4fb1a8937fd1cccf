// float16 (IEEE binary16) and bfloat16 conversions to and from float, rounding to nearest even,
// exact for subnormals, infinities and NaN (a NaN stays a NaN, quieted). Header-only so the
// reduction loops inline and vectorize them. Reductions on 16-bit types convert to float,
// compute, and convert back.
#pragma once

#include <cstdint>
#include <cstring>

namespace cohort::ops {

inline float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint32_t float_to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

inline float bfloat16_to_float(uint16_t h) {
  return bits_to_float(static_cast<uint32_t>(h) << 16);
}

inline uint16_t float_to_bfloat16(float f) {
  uint32_t bits = float_to_bits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// Branch-light conversion (after Fabian Giesen's public-domain method): exact for every value.
inline float float16_to_float(uint16_t h) {
  const uint32_t shifted_exp = 0x7c00u << 13;
  uint32_t o = (h & 0x7fffu) << 13;
  uint32_t exp = shifted_exp & o;
  o += (127u - 15u) << 23;
  if (exp == shifted_exp) {
    o += (128u - 16u) << 23;  // Inf or NaN
  } else if (exp == 0) {
    o += 1u << 23;  // zero or subnormal: renormalize
    o = float_to_bits(bits_to_float(o) - bits_to_float(113u << 23));
  }
  return bits_to_float(o | (static_cast<uint32_t>(h & 0x8000u) << 16));
}

inline uint16_t float_to_float16(float value) {
  uint32_t f = float_to_bits(value);
  uint32_t sign = f & 0x80000000u;
  f ^= sign;
  uint16_t o;
  if (f >= (143u << 23)) {  // overflow to Inf, or NaN
    o = f > (255u << 23) ? 0x7e00 : 0x7c00;
  } else if (f < (113u << 23)) {  // subnormal or zero: let the FPU round
    float shifted = bits_to_float(f) + bits_to_float(126u << 23);
    o = static_cast<uint16_t>(float_to_bits(shifted) - (126u << 23));
  } else {
    uint32_t mant_odd = (f >> 13) & 1u;
    f += ((15u - 127u) << 23) + 0xfffu;
    f += mant_odd;
    o = static_cast<uint16_t>(f >> 13);
  }
  return static_cast<uint16_t>(o | (sign >> 16));
}

}  // namespace cohort::ops
