#include "ops/identity.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace cohort::ops {
namespace {

template <typename T>
void fill(void* buffer, size_t count, T value) {
  std::fill_n(static_cast<T*>(buffer), count, value);
}

template <typename T>
T identity_of(ReduceOp op) {
  using L = std::numeric_limits<T>;
  switch (op) {
    case ReduceOp::kProduct:
      return T{1};
    case ReduceOp::kMin:
      return L::has_infinity ? L::infinity() : L::max();
    case ReduceOp::kMax:
      return L::has_infinity ? -L::infinity() : L::lowest();
    default:
      return T{0};
  }
}

// Raw bits of +inf, -inf and 1.0 in a 16-bit floating format.
struct HalfBits {
  uint16_t plus_inf, minus_inf, one;
};

uint16_t half_identity(ReduceOp op, HalfBits bits) {
  switch (op) {
    case ReduceOp::kProduct:
      return bits.one;
    case ReduceOp::kMin:
      return bits.plus_inf;
    case ReduceOp::kMax:
      return bits.minus_inf;
    default:
      return 0;
  }
}

}  // namespace

void fill_identity(void* buffer, size_t count, DataType dtype, ReduceOp op) {
  switch (dtype) {
    case DataType::kUInt8:
      return fill(buffer, count, identity_of<uint8_t>(op));
    case DataType::kInt8:
      return fill(buffer, count, identity_of<int8_t>(op));
    case DataType::kInt32:
      return fill(buffer, count, identity_of<int32_t>(op));
    case DataType::kInt64:
      return fill(buffer, count, identity_of<int64_t>(op));
    case DataType::kFloat32:
      return fill(buffer, count, identity_of<float>(op));
    case DataType::kFloat64:
      return fill(buffer, count, identity_of<double>(op));
    case DataType::kFloat16:
      return fill(buffer, count, half_identity(op, {0x7C00, 0xFC00, 0x3C00}));
    case DataType::kBFloat16:
      return fill(buffer, count, half_identity(op, {0x7F80, 0xFF80, 0x3F80}));
    case DataType::kBool: {
      bool and_like = op == ReduceOp::kProduct || op == ReduceOp::kMin;
      return fill(buffer, count, static_cast<uint8_t>(and_like ? 1 : 0));
    }
  }
}

}  // namespace cohort::ops
