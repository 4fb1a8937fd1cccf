// Element types, reduction operators and the non-owning tensor view that every collective takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cohort {

// The element type of a tensor.
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
inline constexpr int kNumDataTypes = 9;  // how many DataType values there are

// Bool reductions are logical: sum and max are OR, product and min are AND; average is rejected.
enum class ReduceOp : uint8_t { kSum, kAverage, kMin, kMax, kProduct };
inline constexpr int kNumReduceOps = 5;  // how many ReduceOp values there are

// Bytes per element of `dtype`.
size_t element_size(DataType dtype);
// The type's name, as in error messages: "float32", ...
std::string_view to_string(DataType dtype);
// The operator's name, as in error messages: "sum", ...
std::string_view to_string(ReduceOp op);

// IEEE 754 binary16 and bfloat16 as storage types; arithmetic on them is done in float.
struct float16 {
  uint16_t bits;  // sign, 5 exponent bits, 10 mantissa bits
};
// The upper half of a float32: its sign, 8 exponent bits and 7 mantissa bits.
struct bfloat16 {
  uint16_t bits;  // sign, 8 exponent bits, 7 mantissa bits
};

// The DataType of C++ element type T, for the nine types above (float16 and bfloat16 included).
template <typename T>
constexpr DataType data_type_of();
// \cond specializations
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
// \endcond

// A tensor's dimensions, outermost first; {} is a scalar.
using Shape = std::vector<int64_t>;
// The product of the dimensions (1 for a scalar, 0 when a dimension is 0). Throws InvalidArgument
// when the product does not fit in an int64. A Shape converts to the span; the dimensions of a
// shape stored elsewhere (a packed list of several shapes) need not be copied into one.
int64_t num_elements(std::span<const int64_t> shape);
// The same for dimensions written out in braces: num_elements({2, 3}).
inline int64_t num_elements(std::initializer_list<int64_t> shape) {
  return num_elements(std::span<const int64_t>(shape.begin(), shape.size()));
}
// "[2, 3]", as in error messages.
std::string to_string(const Shape& shape);

// Tensor::device of memory in the host's RAM.
inline constexpr int kCpuDevice = -1;

// A view of caller-owned memory: the caller keeps it alive and untouched until the collective's
// handle completes. `device` >= 0 means the memory is on that CUDA device (NCCL builds only).
struct Tensor {
  void* data = nullptr;                 // the first element
  DataType dtype = DataType::kFloat32;  // the elements' type
  Shape shape;                          // the dimensions, outermost first
  int device = kCpuDevice;              // kCpuDevice, or a CUDA device index

  // The number of elements the shape holds.
  int64_t num_elements() const { return cohort::num_elements(shape); }
  // The size of the viewed memory.
  size_t num_bytes() const { return static_cast<size_t>(num_elements()) * element_size(dtype); }

  // A 1-D view of a contiguous range.
  template <typename T>
  static Tensor of(std::span<T> values) {
    return {const_cast<std::remove_const_t<T>*>(values.data()),
            data_type_of<std::remove_const_t<T>>(),
            {static_cast<int64_t>(values.size())}};
  }
  // A 1-D view of a vector's elements.
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
// negotiation (allgather, alltoall, reducescatter). The result of a collective on device tensors
// stays on their CUDA device.
struct OwnedTensor {
  std::vector<std::byte> bytes;         // a host result's elements, packed (empty on a device)
  DataType dtype = DataType::kFloat32;  // the elements' type
  Shape shape;                          // the dimensions, outermost first
  int device = kCpuDevice;              // kCpuDevice, or the CUDA device holding the result
  // A device result's memory, allocated by the runtime and freed (cudaFree) when the last copy of
  // this OwnedTensor is destroyed.
  std::shared_ptr<void> device_memory;

  // The size of the result in bytes, wherever it is.
  size_t num_bytes() const {
    return static_cast<size_t>(num_elements(shape)) * element_size(dtype);
  }
  // The first element, in host or device memory.
  const void* data() const { return device == kCpuDevice ? bytes.data() : device_memory.get(); }
  // A view of the result, e.g. to pass it to another collective; this OwnedTensor must outlive it.
  Tensor view() const { return {const_cast<void*>(data()), dtype, shape, device}; }

  // A host result's elements as T, which should match dtype. InvalidArgument for a device result
  // (copy it to the host with cudaMemcpy first).
  template <typename T>
  std::span<const T> as() const {
    check_on_host();
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }

 private:
  void check_on_host() const;
};

}  // namespace cohort
