// init(), an allreduce and shutdown(), three times in one process (cohort.h allows init() after
// shutdown()): each runtime meets its peers afresh and reduces correctly. Run under cohortrun
// (static and elastic), under mpirun and alone. Prints "reinit: N cycles" on rank 0 at the end.
#include <string>
#include <vector>

#include "check.h"

using cohort::testing::check;

namespace {

constexpr int kCycles = 3;

void one_cycle(int cycle) {
  cohort::init();
  check(cohort::is_initialized(), "initialized in cycle " + std::to_string(cycle));
  int rank = cohort::rank(), size = cohort::size();
  std::vector<float> values(1000, static_cast<float>(rank + cycle));
  cohort::allreduce("reinit.sum", cohort::Tensor::of(values));
  float want = static_cast<float>(size * (size - 1) / 2 + size * cycle);
  for (float v : values) {
    check(v == want, "cycle " + std::to_string(cycle) + ": the sum is " + std::to_string(v) +
                         ", not " + std::to_string(want));
  }
  // Unnamed collectives are numbered per runtime: the count starts over on every rank alike.
  check(cohort::default_name("allreduce") == "allreduce.noname.0",
        "cycle " + std::to_string(cycle) + ": default names did not start over");
  cohort::shutdown();
  check(!cohort::is_initialized(),
        "still initialized after shutdown, cycle " + std::to_string(cycle));
  std::cout << "rank " << rank << ": cycle " << cycle << " ok (size " << size << ")" << std::endl;
  if (cycle == kCycles - 1 && rank == 0) {
    std::cout << "reinit: " << kCycles << " cycles" << std::endl;
  }
}

}  // namespace

int main() {
  cohort::testing::g_program = "reinit_check";
  for (int cycle = 0; cycle < kCycles; ++cycle) one_cycle(cycle);
  return 0;
}
