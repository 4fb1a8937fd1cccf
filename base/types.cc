#include "cohort/types.h"

#include "cohort/errors.h"

namespace cohort {

size_t element_size(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kBool:
      return 1;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
    case DataType::kInt32:
    case DataType::kFloat32:
      return 4;
    case DataType::kInt64:
    case DataType::kFloat64:
      return 8;
  }
  throw InvalidArgument("unknown data type " + std::to_string(static_cast<int>(dtype)));
}

std::string_view to_string(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8:
      return "uint8";
    case DataType::kInt8:
      return "int8";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kFloat16:
      return "float16";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kBool:
      return "bool";
  }
  return "unknown";
}

std::string_view to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAverage:
      return "average";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kProduct:
      return "product";
  }
  return "unknown";
}

int64_t num_elements(std::span<const int64_t> shape) {
  // A zero dimension empties the tensor whatever the others are, so their product never matters.
  for (int64_t d : shape) {
    if (d == 0) return 0;
  }
  int64_t n = 1;
  for (int64_t d : shape) {
    // Wrapping would describe a different tensor: {2^32, 2^32} would hold 0 elements.
    if (__builtin_mul_overflow(n, d, &n)) {
      throw InvalidArgument("shape " + to_string(Shape(shape.begin(), shape.end())) +
                            " holds more elements than an int64 can count");
    }
  }
  return n;
}

std::string to_string(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

void Tensor::check_holds(size_t elements) const {
  for (int64_t d : shape) {
    if (d < 0) throw InvalidArgument("shape " + to_string(shape) + " has a negative dimension");
  }
  if (static_cast<size_t>(num_elements()) != elements) {
    throw InvalidArgument("shape " + to_string(shape) + " holds " + std::to_string(num_elements()) +
                          " elements but the buffer has " + std::to_string(elements));
  }
}

void OwnedTensor::check_on_host() const {
  if (device == kCpuDevice) return;
  throw InvalidArgument("this result is on CUDA device " + std::to_string(device) +
                        ": copy it to host memory (cudaMemcpy from data()) to read it");
}

}  // namespace cohort
