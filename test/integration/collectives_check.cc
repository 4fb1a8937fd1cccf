// Runs under cohortrun or mpirun: checks every collective × dtype × reduce op against a result
// computed locally (each rank can compute every rank's contribution), out-of-order submission,
// submissions from several threads, and the errors for mismatches and misuse. Exits non-zero on
// the first failure with a message naming what failed.
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <sstream>
#include <thread>

#include "check.h"
#include "cohort/cohort.h"

using namespace cohort;
using namespace cohort::testing;

namespace {

// Exact conversions for the small integers and halves used here.
uint16_t to_bf16(double v) {
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);
}
double from_bf16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint16_t to_fp16(double v) {
  if (v == 0) return std::signbit(v) ? 0x8000 : 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  int exp;
  double mant = std::frexp(std::fabs(v), &exp);  // v = mant * 2^exp, mant in [0.5, 1)
  auto frac = static_cast<uint16_t>(std::lround((mant * 2 - 1) * 1024));
  return sign | static_cast<uint16_t>((exp - 1 + 15) << 10) | frac;
}
double from_fp16(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  double frac = (h & 0x3ff) / 1024.0;
  double v = exp == 0 ? std::ldexp(frac, -14) : std::ldexp(1 + frac, exp - 15);
  return (h & 0x8000) ? -v : v;
}

// A buffer of `n` elements of `dtype`, read and written as doubles.
struct Buffer {
  DataType dtype;
  std::vector<std::byte> bytes;
  Buffer(DataType t, size_t n) : dtype(t), bytes(n * element_size(t)) {}
  size_t size() const { return bytes.size() / element_size(dtype); }
  Tensor tensor(Shape shape = {}) {
    if (shape.empty()) shape = {static_cast<int64_t>(size())};
    return Tensor{bytes.data(), dtype, shape};
  }
  void set(size_t i, double v) {
    void* p = bytes.data() + i * element_size(dtype);
    switch (dtype) {
      case DataType::kUInt8:
        *static_cast<uint8_t*>(p) = static_cast<uint8_t>(v);
        break;
      case DataType::kInt8:
        *static_cast<int8_t*>(p) = static_cast<int8_t>(v);
        break;
      case DataType::kInt32:
        *static_cast<int32_t*>(p) = static_cast<int32_t>(v);
        break;
      case DataType::kInt64:
        *static_cast<int64_t*>(p) = static_cast<int64_t>(v);
        break;
      case DataType::kFloat16:
        *static_cast<uint16_t*>(p) = to_fp16(v);
        break;
      case DataType::kBFloat16:
        *static_cast<uint16_t*>(p) = to_bf16(v);
        break;
      case DataType::kFloat32:
        *static_cast<float*>(p) = static_cast<float>(v);
        break;
      case DataType::kFloat64:
        *static_cast<double*>(p) = v;
        break;
      case DataType::kBool:
        *static_cast<uint8_t*>(p) = v != 0;
        break;
    }
  }
  double get(size_t i) const {
    const void* p = bytes.data() + i * element_size(dtype);
    switch (dtype) {
      case DataType::kUInt8:
        return *static_cast<const uint8_t*>(p);
      case DataType::kInt8:
        return *static_cast<const int8_t*>(p);
      case DataType::kInt32:
        return *static_cast<const int32_t*>(p);
      case DataType::kInt64:
        return static_cast<double>(*static_cast<const int64_t*>(p));
      case DataType::kFloat16:
        return from_fp16(*static_cast<const uint16_t*>(p));
      case DataType::kBFloat16:
        return from_bf16(*static_cast<const uint16_t*>(p));
      case DataType::kFloat32:
        return *static_cast<const float*>(p);
      case DataType::kFloat64:
        return *static_cast<const double*>(p);
      case DataType::kBool:
        return *static_cast<const uint8_t*>(p);
    }
    return 0;
  }
};

const DataType kAllTypes[] = {DataType::kUInt8,   DataType::kInt8,    DataType::kInt32,
                              DataType::kInt64,   DataType::kFloat16, DataType::kBFloat16,
                              DataType::kFloat32, DataType::kFloat64, DataType::kBool};
const ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                            ReduceOp::kProduct};

bool is_integer(DataType t) {
  return t == DataType::kUInt8 || t == DataType::kInt8 || t == DataType::kInt32 ||
         t == DataType::kInt64;
}

// Rank r's i-th input: small values whose sums and products are exact in every type.
double contribution(DataType t, ReduceOp op, int r, size_t i) {
  if (t == DataType::kBool) return (r + i) % 3 == 0 ? 1 : 0;
  if (op == ReduceOp::kProduct) return 1 + static_cast<double>((r + i) % 2);
  double v = static_cast<double>((r * 7 + i * 3) % 11);
  return t == DataType::kUInt8 ? v : v - 4;
}

double reduce_expected(DataType t, ReduceOp op, int size, size_t i, double scale) {
  double acc = contribution(t, op, 0, i) * scale;
  for (int r = 1; r < size; ++r) {
    double v = contribution(t, op, r, i) * scale;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAverage:
        acc = t == DataType::kBool ? (acc || v) : acc + v;
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, v);
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, v);
        break;
      case ReduceOp::kProduct:
        acc = t == DataType::kBool ? (acc && v) : acc * v;
        break;
    }
  }
  if (op == ReduceOp::kAverage) acc /= size;
  return acc;
}

bool close_enough(DataType t, double got, double want) {
  // Integer scaling truncates the product in double (so x * (1/size) may land just below).
  if (is_integer(t)) return std::fabs(got - std::trunc(want)) <= 1.0 + 1e-9;
  double tol = (t == DataType::kFloat16 || t == DataType::kBFloat16) ? 1e-2 : 1e-6;
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

std::string label(const std::string& what, DataType t, ReduceOp op) {
  return what + " " + std::string(to_string(t)) + " " + std::string(to_string(op));
}

void check_allreduce(DataType t, ReduceOp op, size_t n, double prescale, double postscale) {
  if (t == DataType::kBool && (op == ReduceOp::kAverage || prescale != 1 || postscale != 1)) return;
  Buffer in(t, n), out(t, n);
  for (size_t i = 0; i < n; ++i) in.set(i, contribution(t, op, cohort::rank(), i));
  std::string name =
      label("allreduce", t, op) + " n=" + std::to_string(n) + " pre=" + std::to_string(prescale);
  allreduce(name, in.tensor(), out.tensor(), {op, prescale, postscale});
  for (size_t i = 0; i < n; ++i) {
    double want = reduce_expected(t, op, cohort::size(), i, prescale) * postscale;
    if (!close_enough(t, out.get(i), want)) {
      std::ostringstream msg;
      msg << name << ": element " << i << " is " << out.get(i) << ", expected " << want;
      fail(msg.str());
    }
  }
  ++g_checks;
}

void check_every_allreduce() {
  for (DataType t : kAllTypes) {
    for (ReduceOp op : kAllOps) {
      for (size_t n : {size_t{1}, size_t{1000}, size_t{70000}}) check_allreduce(t, op, n, 1, 1);
    }
  }
  for (DataType t : {DataType::kFloat32, DataType::kInt32, DataType::kFloat16}) {
    check_allreduce(t, ReduceOp::kSum, 100, 2.0, 0.5);
    check_allreduce(t, ReduceOp::kAverage, 100, 1.0, 3.0);
  }
  Buffer inplace(DataType::kFloat64, 10);
  for (size_t i = 0; i < 10; ++i) inplace.set(i, cohort::rank() + i);
  allreduce("in place", inplace.tensor());
  int s = cohort::size();
  for (size_t i = 0; i < 10; ++i) {
    check(inplace.get(i) == s * (s - 1) / 2.0 + s * static_cast<double>(i), "in-place allreduce");
  }
}

void check_broadcast_and_allgather() {
  for (DataType t : kAllTypes) {
    for (int root = 0; root < cohort::size(); ++root) {
      Buffer b(t, 33);
      for (size_t i = 0; i < 33; ++i) b.set(i, contribution(t, ReduceOp::kSum, cohort::rank(), i));
      broadcast(label("broadcast", t, ReduceOp::kSum) + " root " + std::to_string(root),
                b.tensor({3, 11}), root);
      for (size_t i = 0; i < 33; ++i) {
        check(close_enough(t, b.get(i), contribution(t, ReduceOp::kSum, root, i)),
              "broadcast " + std::string(to_string(t)) + " from root " + std::to_string(root));
      }
    }
    // Rank r contributes r + 1 rows of 2 elements: the first dimension differs per rank.
    int rows = cohort::rank() + 1;
    Buffer g(t, rows * 2);
    for (int i = 0; i < rows * 2; ++i) g.set(i, contribution(t, ReduceOp::kSum, cohort::rank(), i));
    OwnedTensor out = allgather("allgather " + std::string(to_string(t)), g.tensor({rows, 2}));
    int total = cohort::size() * (cohort::size() + 1) / 2;
    check(out.shape == Shape{total, 2}, "allgather shape " + to_string(out.shape));
    Buffer got(t, total * 2);
    got.bytes = out.bytes;
    size_t pos = 0;
    for (int r = 0; r < cohort::size(); ++r) {
      for (int i = 0; i < (r + 1) * 2; ++i, ++pos) {
        check(close_enough(t, got.get(pos), contribution(t, ReduceOp::kSum, r, i)),
              "allgather " + std::string(to_string(t)) + " row from rank " + std::to_string(r));
      }
    }
  }
  barrier();
  ++g_checks;
}

// Rank r submits the names rotated by r: every rank uses a different order.
void check_out_of_order() {
  const std::vector<std::string> names = {"a", "b", "c", "d", "e"};
  std::vector<std::vector<float>> data(names.size(), std::vector<float>(16, 1.0f));
  std::vector<Handle> handles;
  for (size_t k = 0; k < names.size(); ++k) {
    size_t i = (k + static_cast<size_t>(cohort::rank())) % names.size();
    handles.push_back(
        allreduce_async("order/" + names[i], Tensor::of(data[i]), Tensor::of(data[i])));
  }
  for (auto& h : handles) h.wait();
  for (auto& d : data) check(d[0] == static_cast<float>(cohort::size()), "out-of-order result");
}

void check_threads() {
  std::vector<std::thread> threads;
  std::vector<std::vector<int64_t>> data(4, std::vector<int64_t>(100, 1));
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int step = 0; step < 20; ++step) {
        std::fill(data[t].begin(), data[t].end(), 1);
        allreduce("thread" + std::to_string(t), Tensor::of(data[t]));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (auto& d : data) check(d[99] == cohort::size(), "allreduce from several threads");
}

void check_errors() {
  // Shape mismatch: every rank gets the error, naming the tensor and the ranks; then work goes on.
  std::vector<float> v(static_cast<size_t>(cohort::rank()) + 1, 1.0f);
  expect_error<MismatchError>([&] { allreduce("mismatch", Tensor::of(v)); },
                              "allreduce 'mismatch': mismatched shapes: rank 0 [1], rank 1 [2]",
                              "shape mismatch");
  std::vector<float> ok(4, 1.0f);
  allreduce("after mismatch", Tensor::of(ok));
  check(ok[0] == static_cast<float>(cohort::size()), "runtime usable after a mismatch");

  // A name in flight twice. Rank r's own "dup/r" cannot complete before the barrier, because the
  // other ranks submit it only after the barrier: so the second submission is surely in flight.
  int me = cohort::rank();
  std::vector<std::vector<float>> dup(cohort::size(), std::vector<float>(4, 1.0f));
  std::vector<Handle> dup_handles{
      allreduce_async("dup/" + std::to_string(me), Tensor::of(dup[me]))};
  std::vector<float> b(4);
  expect_error<InvalidArgument>(
      [&] { allreduce_async("dup/" + std::to_string(me), Tensor::of(b)); }, "already in flight",
      "duplicate in-flight name");
  barrier("dup barrier");
  for (int q = 0; q < cohort::size(); ++q) {
    if (q != me)
      dup_handles.push_back(allreduce_async("dup/" + std::to_string(q), Tensor::of(dup[q])));
  }
  for (auto& h : dup_handles) h.wait();
  check(dup[0][0] == static_cast<float>(cohort::size()), "duplicate-name allreduces completed");

  bool flags[3] = {true, false, true};
  expect_error<InvalidArgument>(
      [&] {
        allreduce("bool avg", Tensor::of(std::span<bool>(flags)),
                  Tensor::of(std::span<bool>(flags)), {ReduceOp::kAverage});
      },
      "bool", "bool average");
  std::vector<float> a(4);
  expect_error<InvalidArgument>([&] { broadcast("bad root", Tensor::of(a), cohort::size()); },
                                "root rank", "broadcast root out of range");
  std::vector<double> other(4);
  expect_error<InvalidArgument>([&] { allreduce("dtype", Tensor::of(a), Tensor::of(other)); },
                                "input is float32", "input/output dtype mismatch");
}

}  // namespace

int main() {
  try {
    std::vector<float> x(1);
    cohort::allreduce("before init", Tensor::of(x));
    std::cerr << "collectives_check FAILED: no error before init()" << std::endl;
    return 1;
  } catch (const NotInitialized&) {
  }
  g_program = "collectives_check";
  cohort::init();
  if (cohort::size() < 2) fail("needs at least 2 ranks");
  check_every_allreduce();
  check_broadcast_and_allgather();
  check_out_of_order();
  check_threads();
  check_errors();
  int rank = cohort::rank();
  cohort::shutdown();
  try {
    cohort::barrier();
    std::cerr << "collectives_check FAILED: no error after shutdown()" << std::endl;
    return 1;
  } catch (const NotInitialized&) {
  }
  std::cout << "rank " << rank << ": " << g_checks << " checks passed" << std::endl;
  return 0;
}
