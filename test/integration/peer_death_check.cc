// Worker for the peer-death test: every rank loops over 1 MiB allreduces; the victim rank
// SIGKILLs itself at a chosen step. Every survivor must see an InternalError (not die by SIGPIPE
// or hang) and exits 0 after printing "survived". SIGTERM from the launcher is ignored so the
// launcher's clean-up cannot hide how a survivor would have ended.
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cohort/cohort.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: peer_death_check VICTIM_RANK KILL_AT_STEP" << std::endl;
    return 2;
  }
  int victim = std::atoi(argv[1]);
  int kill_at = std::atoi(argv[2]);
  std::signal(SIGTERM, SIG_IGN);
  cohort::init();
  int rank = cohort::rank();
  std::vector<float> gradient(1 << 18, 1.0f);
  try {
    for (int step = 0; step < 100000; ++step) {
      if (rank == victim && step == kill_at) std::raise(SIGKILL);
      cohort::allreduce("gradient", cohort::Tensor::of(gradient));
    }
  } catch (const cohort::InternalError& e) {
    std::cout << "rank " << rank << " survived: " << e.what() << std::endl;
    cohort::shutdown();
    return 0;
  }
  std::cout << "rank " << rank << " saw no error although rank " << victim << " died" << std::endl;
  return 3;
}
