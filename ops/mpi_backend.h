// The Open MPI data plane, for jobs started by mpirun.
#pragma once

#include <memory>

#include "ops/backend.h"

namespace cohort::ops {

// True when Open MPI's launcher started this process.
bool launched_by_mpirun();

// Initializes MPI on first use in the process (MPI cannot be initialized twice, so it stays
// initialized until the process exits) and works on a duplicate of MPI_COMM_WORLD.
std::unique_ptr<Backend> make_mpi_backend();

}  // namespace cohort::ops
