// The MPI backend under mpirun: every DataType x ReduceOp allreduce, broadcast from every root,
// allgatherv with an empty contribution, barrier. Prints each mismatch (naming dtype, op and
// count) and exits non-zero on any. Run by ctest as `mpirun -np 2 mpi_backend_check`.
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

void check_errors(Backend& b) {
  float x = 1;
  try {
    b.allreduce(&x, 1, DataType::kFloat32, ReduceOp::kAverage, {"x", true});
    expect(false, "allreduce with average did not throw", b.rank());
  } catch (const InvalidArgument&) {
  }
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
