#include "ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "cohort/errors.h"
#include "ops/half.h"

namespace cohort::ops {
namespace {

struct Sum {
  template <typename T>
  static T apply(T a, T b) {
    return a + b;
  }
};
struct Product {
  template <typename T>
  static T apply(T a, T b) {
    return a * b;
  }
};
struct Min {
  template <typename T>
  static T apply(T a, T b) {
    return b < a ? b : a;
  }
};
struct Max {
  template <typename T>
  static T apply(T a, T b) {
    return a < b ? b : a;
  }
};

template <typename Op, typename T>
void reduce_loop(T* __restrict dst, const T* __restrict src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = Op::apply(dst[i], src[i]);
}

// Integer sums and products wrap: computed in the unsigned type, where overflow is defined.
template <typename Op, typename T>
void reduce_integer(T* __restrict dst, const T* __restrict src, size_t n) {
  using U = std::make_unsigned_t<T>;
  if constexpr (std::is_same_v<Op, Sum> || std::is_same_v<Op, Product>) {
    for (size_t i = 0; i < n; ++i) {
      dst[i] = static_cast<T>(Op::apply(static_cast<U>(dst[i]), static_cast<U>(src[i])));
    }
  } else {
    reduce_loop<Op>(dst, src, n);
  }
}

// 16-bit floats: convert a block to float, reduce, convert back; each loop vectorizes.
template <typename Op, float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void reduce_half(uint16_t* __restrict dst, const uint16_t* __restrict src, size_t n) {
  constexpr size_t kBlock = 256;
  float a[kBlock], b[kBlock];
  for (size_t start = 0; start < n; start += kBlock) {
    size_t len = std::min(kBlock, n - start);
    for (size_t i = 0; i < len; ++i) a[i] = ToFloat(dst[start + i]);
    for (size_t i = 0; i < len; ++i) b[i] = ToFloat(src[start + i]);
    for (size_t i = 0; i < len; ++i) a[i] = Op::apply(a[i], b[i]);
    for (size_t i = 0; i < len; ++i) dst[start + i] = FromFloat(a[i]);
  }
}

template <typename Op>
void reduce_bool(uint8_t* __restrict dst, const uint8_t* __restrict src, size_t n) {
  if constexpr (std::is_same_v<Op, Sum> || std::is_same_v<Op, Max>) {
    for (size_t i = 0; i < n; ++i) dst[i] = (dst[i] | src[i]) != 0;
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = (dst[i] & src[i]) != 0;
  }
}

template <typename Op>
void reduce_typed(void* dst, const void* src, size_t n, DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8:
      return reduce_integer<Op>(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n);
    case DataType::kInt8:
      return reduce_integer<Op>(static_cast<int8_t*>(dst), static_cast<const int8_t*>(src), n);
    case DataType::kInt32:
      return reduce_integer<Op>(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), n);
    case DataType::kInt64:
      return reduce_integer<Op>(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), n);
    case DataType::kFloat16:
      return reduce_half<Op, float16_to_float, float_to_float16>(
          static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n);
    case DataType::kBFloat16:
      return reduce_half<Op, bfloat16_to_float, float_to_bfloat16>(
          static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n);
    case DataType::kFloat32:
      return reduce_loop<Op>(static_cast<float*>(dst), static_cast<const float*>(src), n);
    case DataType::kFloat64:
      return reduce_loop<Op>(static_cast<double*>(dst), static_cast<const double*>(src), n);
    case DataType::kBool:
      return reduce_bool<Op>(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n);
  }
}

template <typename T>
void scale_integer(T* buffer, size_t n, double factor) {
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  for (size_t i = 0; i < n; ++i) {
    // Truncated toward zero, as Horovod (and a cast in C or torch) does.
    double v = std::trunc(static_cast<double>(buffer[i]) * factor);
    // int64's max is not representable as a double: compare before converting back.
    buffer[i] = v <= lo   ? std::numeric_limits<T>::min()
                : v >= hi ? std::numeric_limits<T>::max()
                          : static_cast<T>(v);
  }
}

template <typename T>
void scale_float(T* __restrict buffer, size_t n, T factor) {
  for (size_t i = 0; i < n; ++i) buffer[i] *= factor;
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void scale_half(uint16_t* buffer, size_t n, float factor) {
  for (size_t i = 0; i < n; ++i) buffer[i] = FromFloat(ToFloat(buffer[i]) * factor);
}

}  // namespace

void reduce_into(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return reduce_typed<Sum>(dst, src, count, dtype);
    case ReduceOp::kProduct:
      return reduce_typed<Product>(dst, src, count, dtype);
    case ReduceOp::kMin:
      return reduce_typed<Min>(dst, src, count, dtype);
    case ReduceOp::kMax:
      return reduce_typed<Max>(dst, src, count, dtype);
    case ReduceOp::kAverage:
      break;
  }
  throw InvalidArgument("reduce_into: " + std::string(to_string(op)) +
                        " is not an elementwise reduction");
}

void scale(void* buffer, size_t n, DataType dtype, double factor) {
  switch (dtype) {
    case DataType::kUInt8:
      return scale_integer(static_cast<uint8_t*>(buffer), n, factor);
    case DataType::kInt8:
      return scale_integer(static_cast<int8_t*>(buffer), n, factor);
    case DataType::kInt32:
      return scale_integer(static_cast<int32_t*>(buffer), n, factor);
    case DataType::kInt64:
      return scale_integer(static_cast<int64_t*>(buffer), n, factor);
    case DataType::kFloat16:
      return scale_half<float16_to_float, float_to_float16>(static_cast<uint16_t*>(buffer), n,
                                                            static_cast<float>(factor));
    case DataType::kBFloat16:
      return scale_half<bfloat16_to_float, float_to_bfloat16>(static_cast<uint16_t*>(buffer), n,
                                                              static_cast<float>(factor));
    case DataType::kFloat32:
      return scale_float(static_cast<float*>(buffer), n, static_cast<float>(factor));
    case DataType::kFloat64:
      return scale_float(static_cast<double*>(buffer), n, factor);
    case DataType::kBool:
      break;
  }
  throw InvalidArgument("bool tensors cannot be scaled");
}

}  // namespace cohort::ops
