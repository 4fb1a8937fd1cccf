// Runs under cohortrun's elastic mode with 3 workers: rank 0 shuts down and returns 1 from main()
// while the others wait in collectives it never submits. The others' collective fails ("rank 0 has
// shut down"), they reset without it and finish in a round of 2. rank0_exit.sh checks that no
// message blames a survivor for rank 0's exit.
#include <iostream>
#include <vector>

#include "cohort/cohort.h"
#include "cohort/elastic/run.h"
#include "cohort/elastic/state.h"

int main() {
  cohort::init();
  if (cohort::rank() == 0 && cohort::elastic::resets() == 0) {
    std::cout << "rank 0 exits with 1" << std::endl;
    cohort::shutdown();  // as the runtime's static destructor would, but before exit() begins
    return 1;
  }
  cohort::elastic::State state;
  cohort::elastic::run(state, [](cohort::elastic::State&) {
    std::vector<int32_t> count(1, 1);
    cohort::allreduce("count_inc", cohort::Tensor::of(count));
    std::cout << "count_inc=" << count[0] << " size=" << cohort::size() << std::endl;
  });
  cohort::shutdown();
  return 0;
}
