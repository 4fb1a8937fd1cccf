// Test helper shared by the backend tests: runs allreduce and reduce-scatter for every DataType x
// ReduceOp on rank-dependent inputs and compares with a result folded locally in double (inputs
// are small integers, so every sum and product is exact in every type, float16 included), and
// alltoallv on arbitrary bit patterns that must arrive bit-exact.
#pragma once

#include <cstring>
#include <numeric>
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

// The value every rank holds at element i after reducing every rank's input_value.
inline double reduced_value(DataType d, ReduceOp op, int size, size_t i) {
  double want = input_value(d, op, 0, i);
  for (int r = 1; r < size; ++r) want = fold(d, op, want, input_value(d, op, r, i));
  return want;
}

// Fills `input` with this rank's inputs (sum(counts) elements), calls run(input, output) which
// must reduce-scatter into `output` (counts[rank] elements, sized exactly so that a sanitizer
// sees any overrun), and returns "" if this rank's block matches, else a message.
template <typename Run>
std::string check_reduce_scatter(int rank, int size, DataType d, ReduceOp op,
                                 const std::vector<size_t>& counts, Run&& run) {
  size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  size_t offset = std::accumulate(counts.begin(), counts.begin() + rank, size_t{0});
  std::vector<std::byte> input(total * element_size(d));
  std::vector<std::byte> output(counts[rank] * element_size(d), std::byte{0x5a});
  for (size_t i = 0; i < total; ++i) store(d, input.data(), i, input_value(d, op, rank, i));
  run(input.data(), output.data());
  for (size_t j = 0; j < counts[rank]; ++j) {
    double want = reduced_value(d, op, size, offset + j);
    double got = load(d, output.data(), j);
    if (got != want) {
      std::ostringstream out;
      out << "reduce_scatter " << to_string(d) << " " << to_string(op) << " counts=";
      for (size_t c : counts) out << c << ",";
      out << " ranks=" << size << ": rank " << rank << " element " << j << " is " << got
          << ", expected " << want;
      return out.str();
    }
  }
  return "";
}

// Every dtype x op through backend.reduce_scatter with `counts`; returns the first mismatch.
inline std::string check_reduce_scatter_matrix(Backend& backend,
                                               const std::vector<size_t>& counts) {
  for (DataType d : kAllTypes) {
    for (ReduceOp op : kAllOps) {
      auto error = check_reduce_scatter(
          backend.rank(), backend.size(), d, op, counts,
          [&](const void* in, void* out) { backend.reduce_scatter(in, out, counts, d, op); });
      if (!error.empty()) return error;
    }
  }
  return "";
}

// How many elements rank `from` sends rank `to` in the alltoallv checks: uneven, zero for some
// pairs (never for all of a rank's), and zero for everything to or from `idle` (-1: none).
inline size_t alltoallv_elements(int from, int to, size_t scale, int idle) {
  if (from == idle || to == idle) return 0;
  return static_cast<size_t>((from * 5 + to * 3 + 1) % 4) * scale;
}

// Byte i of what rank `from` sends rank `to`: every bit pattern occurs (NaN payloads,
// subnormals and negative zeros in the float types), so a backend that converted would show.
inline std::byte alltoallv_byte(int from, int to, size_t i) {
  return static_cast<std::byte>(
      (static_cast<size_t>(from) * 131 + static_cast<size_t>(to) * 71 + i * 29 + (i >> 8)) & 0xff);
}

// alltoallv of `dtype`-sized elements through `run(input, send_counts, output, recv_counts)`
// (counts in bytes); returns "" if every byte arrived, else a message.
template <typename Run>
std::string check_alltoallv(int rank, int size, DataType dtype, size_t scale, int idle, Run&& run) {
  size_t element = element_size(dtype);
  std::vector<size_t> send_counts(size), recv_counts(size);
  for (int p = 0; p < size; ++p) {
    send_counts[p] = alltoallv_elements(rank, p, scale, idle) * element;
    recv_counts[p] = alltoallv_elements(p, rank, scale, idle) * element;
  }
  std::vector<std::byte> input(std::accumulate(send_counts.begin(), send_counts.end(), size_t{0}));
  std::vector<std::byte> output(std::accumulate(recv_counts.begin(), recv_counts.end(), size_t{0}),
                                std::byte{0x5a});
  for (size_t at = 0, p = 0; p < send_counts.size(); ++p) {
    for (size_t i = 0; i < send_counts[p]; ++i)
      input[at++] = alltoallv_byte(rank, static_cast<int>(p), i);
  }
  run(input.data(), send_counts, output.data(), recv_counts);
  for (size_t at = 0, p = 0; p < recv_counts.size(); ++p) {
    for (size_t i = 0; i < recv_counts[p]; ++i, ++at) {
      if (output[at] == alltoallv_byte(static_cast<int>(p), rank, i)) continue;
      std::ostringstream out;
      out << "alltoallv " << to_string(dtype) << " scale=" << scale << " ranks=" << size
          << ": rank " << rank << " byte " << i << " from rank " << p << " is wrong";
      return out.str();
    }
  }
  return "";
}

// alltoallv through `backend` for every dtype, with `idle` sending and receiving nothing.
inline std::string check_alltoallv_matrix(Backend& backend, size_t scale, int idle = -1) {
  for (DataType d : kAllTypes) {
    auto error = check_alltoallv(
        backend.rank(), backend.size(), d, scale, idle,
        [&](const void* in, std::span<const size_t> sends, void* out,
            std::span<const size_t> receives) { backend.alltoallv(in, sends, out, receives); });
    if (!error.empty()) return error;
  }
  return "";
}

}  // namespace cohort::ops::testing
