// The CPU backend that the runtime would build from the launcher's environment (Gloo under
// cohortrun, Gloo bootstrapped by MPI under mpirun with COHORT_CPU_OPERATIONS=gloo, and the
// shared-memory backend over Gloo where cohortrun placed every rank on one host), in separate
// processes: every check of backend_checks.h, splits included, so they are known to work over
// each launcher's rendezvous and not only with the unit tests' in-process store.
//
// Usage: backend_process_check EXPECTED_BACKEND (gloo or shm): fails if the runtime's choice
// differs, so that a test cannot pass on another path than it names.
#include <cstdio>
#include <string>

#include "backend_checks.h"
#include "core/config.h"
#include "job_backend.h"

using namespace cohort;

int main(int argc, char** argv) {
  try {
    auto backend =
        ops::testing::job_backend(Config::from_environment(), argc > 1 ? argv[1] : "gloo");
    ops::testing::BackendChecks checks(*backend);
    checks.run_all();
    std::printf("rank %d of %d (%s): %s\n", backend->rank(), backend->size(),
                std::string(backend->name()).c_str(), checks.failures() ? "FAILED" : "passed");
    return checks.failures() == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    return 1;
  }
}
