// The MPI backend under mpirun: every check of backend_checks.h, then a second backend in the same
// process. Prints each mismatch and exits non-zero on any. Run by ctest as
// `mpirun -np 2 mpi_backend_check` (and -np 3).
#include <cstdio>
#include <string>

#include "backend_checks.h"
#include "ops/mpi_backend.h"

using namespace cohort;
using namespace cohort::ops;

int main() {
  try {
    if (!launched_by_mpirun()) {
      std::fprintf(stderr, "launched_by_mpirun() is false under mpirun\n");
      return 1;
    }
    auto b = make_mpi_backend();
    testing::BackendChecks checks(*b);
    checks.run_all();
    // A second backend in the same process (the runtime restarting) reuses the initialized MPI.
    b.reset();
    auto again = make_mpi_backend();
    testing::BackendChecks more(*again);
    std::string error = testing::check_allreduce_matrix(*again, {5});
    more.expect(error.empty(), "after re-creation: " + error);
    again->barrier();
    return checks.failures() + more.failures() == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    return 1;
  }
}
