// The smallest Cohort program: every rank contributes its rank, and every rank prints the sum.
//   cohortrun -np 4 ./hello_allreduce        (Gloo)
//   mpirun -np 2 ./hello_allreduce           (MPI)
//   ./hello_allreduce                        (a world of one)
#include <iostream>
#include <vector>

#include "cohort/cohort.h"

int main() {
  try {
    cohort::init();
    std::vector<float> values = {static_cast<float>(cohort::rank()), 1.0f};
    cohort::allreduce("hello", cohort::Tensor::of(values));
    std::cout << "rank " << cohort::rank() << " of " << cohort::size() << " ("
              << cohort::backend_name() << "): sum of ranks = " << values[0]
              << ", ranks counted = " << values[1] << std::endl;
    cohort::shutdown();
    return 0;
  } catch (const cohort::Error& e) {  // why this rank could not join or reduce, then exit 1
    std::cerr << "hello_allreduce: " << e.what() << std::endl;
    return 1;
  }
}
