// The MPI backend under mpirun: every DataType x ReduceOp allreduce and reduce-scatter (uneven,
// even and zero counts), broadcast from every root, allgatherv with an empty contribution,
// alltoallv with uneven and zero counts, splits into subsets while the parent keeps working,
// barrier, argument errors. Prints each mismatch (naming dtype, op and count) and exits non-zero
// on any. Run by ctest as `mpirun -np 2 mpi_backend_check` (and -np 3).
#include <cstdio>
#include <string>
#include <vector>

#include "cohort/errors.h"
#include "collective_matrix.h"
#include "ops/mpi_backend.h"

using namespace cohort;
using namespace cohort::ops;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what, int rank) {
  if (ok) return;
  std::fprintf(stderr, "rank %d: %s\n", rank, what.c_str());
  ++failures;
}

void check_broadcast(Backend& b) {
  for (int root = 0; root < b.size(); ++root) {
    std::vector<int64_t> data(100000, b.rank());
    b.broadcast(data.data(), data.size() * sizeof(int64_t), root);
    expect(data.front() == root && data.back() == root,
           "broadcast from root " + std::to_string(root), b.rank());
  }
}

void check_allgatherv(Backend& b) {
  // Rank 0 contributes nothing; rank r > 0 contributes r + 2 bytes of value r.
  std::vector<size_t> counts(b.size());
  size_t total = 0;
  for (int r = 0; r < b.size(); ++r) total += counts[r] = r == 0 ? 0 : r + 2;
  std::vector<char> mine(counts[b.rank()], static_cast<char>(b.rank()));
  std::vector<char> all(total, -1);
  b.allgatherv(mine.data(), all.data(), counts);
  size_t at = 0;
  for (int r = 0; r < b.size(); ++r) {
    for (size_t i = 0; i < counts[r]; ++i, ++at) {
      expect(all[at] == r, "allgatherv byte " + std::to_string(at), b.rank());
    }
  }
}

void check_alltoallv(Backend& b) {
  for (size_t scale : {size_t{1}, size_t{3}, size_t{50001}}) {
    std::string error = testing::check_alltoallv_matrix(b, scale);
    expect(error.empty(), error, b.rank());
  }
  std::string error = testing::check_alltoallv_matrix(b, 7, b.size() - 1);
  expect(error.empty(), "with an idle rank: " + error, b.rank());
}

void check_reduce_scatter(Backend& b) {
  // Uneven with an empty block for rank 1, even (MPI_Reduce_scatter_block), and all empty.
  const size_t pattern[] = {3, 0, 5, 1};
  for (size_t scale : {size_t{0}, size_t{1}, size_t{20011}}) {
    std::vector<size_t> uneven, even(b.size(), scale + 2);
    for (int r = 0; r < b.size(); ++r) uneven.push_back(pattern[r % 4] * scale + (r == 0));
    for (const auto& counts : {uneven, even}) {
      std::string error = testing::check_reduce_scatter_matrix(b, counts);
      expect(error.empty(), error, b.rank());
    }
  }
}

// Splits of the last two ranks and of the first and last, in sequence; the parent works between
// and after them.
void check_split(Backend& b) {
  int last = b.size() - 1;
  std::vector<int> tail = {last - 1, last};
  if (b.rank() >= last - 1) {
    auto sub = b.split(tail, "tail");
    expect(sub->size() == 2 && sub->rank() == b.rank() - (last - 1), "split renumbering", b.rank());
    std::string error = testing::check_allreduce_matrix(*sub, {1, 33});
    expect(error.empty(), "split tail: " + error, b.rank());
    int64_t value = sub->rank() == 1 ? 42 : -1;
    sub->broadcast(&value, sizeof value, 1);
    expect(value == 42, "broadcast on a split", b.rank());
    sub->barrier();
  }
  std::string error = testing::check_allreduce_matrix(b, {7});
  expect(error.empty(), "parent after a split: " + error, b.rank());
  std::vector<int> ends = {0, last};
  if (b.rank() == 0 || b.rank() == last) {
    auto sub = b.split(ends, "ends");
    error = testing::check_reduce_scatter_matrix(*sub, {2, 3});
    expect(error.empty(), "split ends: " + error, b.rank());
    error = testing::check_alltoallv_matrix(*sub, 2);
    expect(error.empty(), "split ends: " + error, b.rank());
  }
  error = testing::check_alltoallv_matrix(b, 2);
  expect(error.empty(), "parent after two splits: " + error, b.rank());
}

template <typename F>
void expect_invalid(Backend& b, const char* what, F&& f) {
  try {
    f();
    expect(false, std::string(what) + " did not throw InvalidArgument", b.rank());
  } catch (const InvalidArgument&) {
  }
}

void check_errors(Backend& b) {
  float x = 1;
  expect_invalid(b, "allreduce with average", [&] {
    b.allreduce(&x, 1, DataType::kFloat32, ReduceOp::kAverage, {"x", true});
  });
  std::vector<float> in(8), out(8);
  std::vector<size_t> right(b.size(), 1), wrong(b.size() + 1, 1);
  expect_invalid(b, "alltoallv with a count too many",
                 [&] { b.alltoallv(in.data(), wrong, out.data(), right); });
  expect_invalid(b, "reduce_scatter with a count too many", [&] {
    b.reduce_scatter(in.data(), out.data(), wrong, DataType::kFloat32, ReduceOp::kSum);
  });
  expect_invalid(b, "reduce_scatter with average", [&] {
    b.reduce_scatter(in.data(), out.data(), right, DataType::kFloat32, ReduceOp::kAverage);
  });
  std::vector<int> without_me = {(b.rank() + 1) % b.size()};
  expect_invalid(b, "split without the caller", [&] { b.split(without_me, "x"); });
}

}  // namespace

int main() {
  try {
    expect(launched_by_mpirun(), "launched_by_mpirun() is false under mpirun", -1);
    auto b = make_mpi_backend();
    std::string error = testing::check_allreduce_matrix(*b, {0, 1, 7, 33, 1000}, size_t{1} << 20);
    expect(error.empty(), error, b->rank());
    check_broadcast(*b);
    check_allgatherv(*b);
    check_alltoallv(*b);
    check_reduce_scatter(*b);
    check_split(*b);
    check_errors(*b);
    b->barrier();
    // A second backend in the same process (the runtime restarting) reuses the initialized MPI.
    b.reset();
    auto again = make_mpi_backend();
    error = testing::check_allreduce_matrix(*again, {5});
    expect(error.empty(), "after re-creation: " + error, again->rank());
    again->barrier();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
