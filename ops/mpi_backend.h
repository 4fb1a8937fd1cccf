// The Open MPI data plane, for jobs started by mpirun.
#pragma once

#include <memory>

#include "ops/backend.h"

namespace cohort::ops {

// True when Open MPI's launcher started this process: env::launched_by_mpirun (base/launch_env.h)
// on this process's environment.
bool launched_by_mpirun();

// Initializes MPI (MPI_THREAD_MULTIPLE) on first use in the process and finalizes it at exit:
// MPI cannot be initialized again after MPI_Finalize, so it stays up across runtime restarts.
// Works on a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN; every MPI error becomes an
// InternalError naming the call. float16, bfloat16 and bool reduce through ops/reduce.h kernels
// (user-defined MPI_Ops); the other types use MPI's native ops. Throws InternalError if MPI was
// already finalized.
std::unique_ptr<Backend> make_mpi_backend();

}  // namespace cohort::ops
