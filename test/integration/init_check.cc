// Calls init() and reports on one line how it went, so that a test can check what each rank of a
// job that cannot start was told: "rank R: InvalidArgument: <message>" (or another exception
// type), or "rank R: started". Exits 0 either way, so cohortrun stops no rank early.
#include <cstdlib>
#include <iostream>
#include <string>

#include "cohort/cohort.h"

int main() {
  const char* env_rank = std::getenv("COHORT_RANK");
  if (!env_rank) env_rank = std::getenv("OMPI_COMM_WORLD_RANK");  // under mpirun
  std::string rank = env_rank ? env_rank : "-";
  try {
    cohort::init();
  } catch (const cohort::InvalidArgument& e) {
    std::cout << "rank " << rank << ": InvalidArgument: " << e.what() << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cout << "rank " << rank << ": other exception: " << e.what() << std::endl;
    return 0;
  }
  cohort::shutdown();
  std::cout << "rank " << rank << ": started" << std::endl;
  return 0;
}
