// The CPU backend that the runtime would build from the launcher's environment (Gloo under
// cohortrun, Gloo bootstrapped by MPI under mpirun with COHORT_CPU_OPERATIONS=gloo), in separate
// processes: every check of backend_checks.h, splits included, so they are known to work over
// each launcher's rendezvous and not only with the unit tests' in-process store.
#include <csignal>
#include <cstdio>

#include "backend_checks.h"
#include "core/backend_factory.h"
#include "core/config.h"

using namespace cohort;

int main() {
  try {
    std::signal(SIGPIPE, SIG_IGN);  // as the runtime does before Gloo connects
    auto backend = make_backend(Config::from_environment());
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
