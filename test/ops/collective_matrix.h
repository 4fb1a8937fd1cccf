// Test helper shared by the Gloo and MPI backend tests: runs allreduce for every DataType x
// ReduceOp on rank-dependent inputs and compares with a result folded locally in double. Inputs
// are small integers, so every sum and product is exact in every type (float16 included).
#pragma once

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "cohort/types.h"
#include "ops/backend.h"
#include "ops/half.h"

namespace cohort::ops::testing {

inline constexpr DataType kAllTypes[] = {
    DataType::kUInt8,   DataType::kInt8,    DataType::kInt32,
    DataType::kInt64,   DataType::kFloat16, DataType::kBFloat16,
    DataType::kFloat32, DataType::kFloat64, DataType::kBool};
inline constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax,
                                       ReduceOp::kProduct};

inline bool is_signed(DataType d) {
  return d != DataType::kUInt8 && d != DataType::kBool;
}

// Rank `rank`'s input at index i: within {0,1} for bool, {1,2} (or {-1,1,2}) for products so
// that 4 ranks stay below 2^4, and {0..3} (or {-1..2}) otherwise.
inline double input_value(DataType d, ReduceOp op, int rank, size_t i) {
  auto k = static_cast<int>((static_cast<size_t>(rank) * 3 + i) % 4);
  if (d == DataType::kBool) return (k & 1) == 0 ? 1 : 0;
  if (op == ReduceOp::kProduct) return is_signed(d) && k == 3 ? -1 : 1 + (k & 1);
  return is_signed(d) ? k - 1 : k;
}

inline double fold(DataType d, ReduceOp op, double a, double b) {
  bool logical_or = d == DataType::kBool && (op == ReduceOp::kSum || op == ReduceOp::kMax);
  if (logical_or) return a != 0 || b != 0 ? 1 : 0;
  switch (op) {
    case ReduceOp::kSum:
      return a + b;
    case ReduceOp::kMin:
      return a < b ? a : b;
    case ReduceOp::kMax:
      return a < b ? b : a;
    default:
      return a * b;  // product; for bool, 0/1 times 0/1 is AND
  }
}

inline void store(DataType d, void* base, size_t i, double v) {
  auto put = [&](auto x) { std::memcpy(static_cast<char*>(base) + i * sizeof(x), &x, sizeof(x)); };
  switch (d) {
    case DataType::kUInt8:
    case DataType::kBool:
      return put(static_cast<uint8_t>(v));
    case DataType::kInt8:
      return put(static_cast<int8_t>(v));
    case DataType::kInt32:
      return put(static_cast<int32_t>(v));
    case DataType::kInt64:
      return put(static_cast<int64_t>(v));
    case DataType::kFloat16:
      return put(float_to_float16(static_cast<float>(v)));
    case DataType::kBFloat16:
      return put(float_to_bfloat16(static_cast<float>(v)));
    case DataType::kFloat32:
      return put(static_cast<float>(v));
    case DataType::kFloat64:
      return put(v);
  }
}

inline double load(DataType d, const void* base, size_t i) {
  auto get = [&](auto x) {
    std::memcpy(&x, static_cast<const char*>(base) + i * sizeof(x), sizeof(x));
    return x;
  };
  switch (d) {
    case DataType::kUInt8:
    case DataType::kBool:
      return get(uint8_t{});
    case DataType::kInt8:
      return get(int8_t{});
    case DataType::kInt32:
      return get(int32_t{});
    case DataType::kInt64:
      return static_cast<double>(get(int64_t{}));
    case DataType::kFloat16:
      return float16_to_float(get(uint16_t{}));
    case DataType::kBFloat16:
      return bfloat16_to_float(get(uint16_t{}));
    case DataType::kFloat32:
      return get(float{});
    case DataType::kFloat64:
      return get(double{});
  }
  return 0;
}

// Fills `buffer` with this rank's inputs, allreduces it through `run` (which reduces `buffer`
// in place) and returns "" if every element matches, else a message naming dtype, op and count.
template <typename Run>
std::string check_allreduce(int rank, int size, DataType d, ReduceOp op, size_t count,
                            std::vector<std::byte>& buffer, Run&& run) {
  buffer.resize(count * element_size(d));
  for (size_t i = 0; i < count; ++i) store(d, buffer.data(), i, input_value(d, op, rank, i));
  run(buffer.data());
  for (size_t i = 0; i < count; ++i) {
    double want = input_value(d, op, 0, i);
    for (int r = 1; r < size; ++r) want = fold(d, op, want, input_value(d, op, r, i));
    double got = load(d, buffer.data(), i);
    if (got != want) {
      std::ostringstream out;
      out << "allreduce " << to_string(d) << " " << to_string(op) << " count=" << count
          << " ranks=" << size << ": rank " << rank << " element " << i << " is " << got
          << ", expected " << want;
      return out.str();
    }
  }
  return "";
}

// The whole dtype x op matrix through `backend` at each of `counts` elements and, if
// `large_bytes` > 0, at a count just over `large_bytes` bytes; returns the first mismatch.
inline std::string check_allreduce_matrix(Backend& backend, std::vector<size_t> counts,
                                          size_t large_bytes = 0) {
  std::vector<std::byte> buffer;
  if (large_bytes > 0) counts.push_back(0);  // stands for the large count, which depends on d
  for (size_t listed : counts) {
    for (DataType d : kAllTypes) {
      size_t count = listed > 0 || large_bytes == 0 ? listed : large_bytes / element_size(d) + 3;
      for (ReduceOp op : kAllOps) {
        std::string binding = std::string(to_string(d)) + "/" + std::string(to_string(op));
        auto error =
            check_allreduce(backend.rank(), backend.size(), d, op, count, buffer, [&](void* data) {
              backend.allreduce(data, count, d, op, {binding, true});
            });
        if (!error.empty()) return error;
      }
    }
  }
  return "";
}

}  // namespace cohort::ops::testing
