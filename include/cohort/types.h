// Element types, reduction operators and the non-owning tensor view that every collective takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cohort {

enum class DataType : uint8_t {
  kUInt8,
  kInt8,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kBool,
};
inline constexpr int kNumDataTypes = 9;

// Bool reductions are logical: sum and max are OR, product and min are AND; average is rejected.
enum class ReduceOp : uint8_t { kSum, kAverage, kMin, kMax, kProduct };
inline constexpr int kNumReduceOps = 5;

size_t element_size(DataType dtype);
std::string_view to_string(DataType dtype);
std::string_view to_string(ReduceOp op);

// IEEE 754 binary16 and bfloat16 as storage types; arithmetic on them is done in float.
struct float16 {
  uint16_t bits;
};
struct bfloat16 {
  uint16_t bits;
};

template <typename T>
constexpr DataType data_type_of();
template <>
constexpr DataType data_type_of<uint8_t>() {
  return DataType::kUInt8;
}
template <>
constexpr DataType data_type_of<int8_t>() {
  return DataType::kInt8;
}
template <>
constexpr DataType data_type_of<int32_t>() {
  return DataType::kInt32;
}
template <>
constexpr DataType data_type_of<int64_t>() {
  return DataType::kInt64;
}
template <>
constexpr DataType data_type_of<float16>() {
  return DataType::kFloat16;
}
template <>
constexpr DataType data_type_of<bfloat16>() {
  return DataType::kBFloat16;
}
template <>
constexpr DataType data_type_of<float>() {
  return DataType::kFloat32;
}
template <>
constexpr DataType data_type_of<double>() {
  return DataType::kFloat64;
}
template <>
constexpr DataType data_type_of<bool>() {
  return DataType::kBool;
}

using Shape = std::vector<int64_t>;
int64_t num_elements(const Shape& shape);
std::string to_string(const Shape& shape);

// Tensor::device of memory in the host's RAM.
inline constexpr int kCpuDevice = -1;

// A view of caller-owned memory: the caller keeps it alive and untouched until the collective's
// handle completes. `device` >= 0 means the memory is on that CUDA device (NCCL builds only).
struct Tensor {
  void* data = nullptr;
  DataType dtype = DataType::kFloat32;
  Shape shape;
  int device = kCpuDevice;

  int64_t num_elements() const { return cohort::num_elements(shape); }
  size_t num_bytes() const { return static_cast<size_t>(num_elements()) * element_size(dtype); }

  // A 1-D view of a contiguous range.
  template <typename T>
  static Tensor of(std::span<T> values) {
    return {const_cast<std::remove_const_t<T>*>(values.data()),
            data_type_of<std::remove_const_t<T>>(),
            {static_cast<int64_t>(values.size())}};
  }
  template <typename T>
  static Tensor of(std::vector<T>& values) {
    return of(std::span<T>(values));
  }
  // A view of a contiguous range with an explicit shape; throws if the sizes disagree.
  template <typename T>
  static Tensor of(std::span<T> values, Shape shape) {
    Tensor t = of(values);
    t.shape = std::move(shape);
    t.check_holds(values.size());
    return t;
  }

 private:
  void check_holds(size_t elements) const;
};

// Memory owned by the runtime: the result of a collective whose output size is only known after
// negotiation (allgather).
struct OwnedTensor {
  std::vector<std::byte> bytes;
  DataType dtype = DataType::kFloat32;
  Shape shape;

  template <typename T>
  std::span<const T> as() const {
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
};

}  // namespace cohort
