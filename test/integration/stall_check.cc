// The classic data-parallel hang: rank 0 runs one more training step than the others, so its
// allreduce waits for ranks that are already waiting at the end-of-training barrier. With a stall
// shutdown time the job must fail with a message naming the tensor and the missing ranks instead
// of hanging (stall_check.sh checks the messages).
#include <iostream>
#include <vector>

#include "cohort/cohort.h"

int main() {
  cohort::init();
  int rank = cohort::rank();
  int steps = rank == 0 ? 4 : 3;
  std::vector<float> gradient(1000, 1.0f);
  try {
    for (int step = 0; step < steps; ++step) {
      cohort::allreduce("grad", cohort::Tensor::of(gradient));
    }
    cohort::barrier("end of training");
  } catch (const cohort::StallError& e) {
    std::cout << "rank " << rank << " StallError: " << e.what() << std::endl;
    cohort::shutdown();
    return 1;
  }
  std::cout << "rank " << rank << " finished without a stall error" << std::endl;
  cohort::shutdown();
  return 0;
}
