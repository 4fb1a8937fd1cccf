// Open MPI, loaded when a job started by mpirun first needs it (dlopen of libmpi.so.40, with
// RTLD_GLOBAL: Open MPI's components, which it loads itself, look for its symbols there), so
// nothing of Cohort links libmpi: a machine without Open MPI runs every job cohortrun starts, and
// only a job started by mpirun needs the library. <mpi.h> gives the types and signatures; the
// functions and Open MPI's predefined handles (MPI_COMM_WORLD and the like are addresses of
// globals of libmpi) are looked up by name.
#pragma once

#include <mpi.h>

#include <string>

namespace cohort::ops {

// What the MPI backend (mpi_backend.cc) calls, resolved from one loaded libmpi.
struct MpiLibrary {
  decltype(&::MPI_Initialized) initialized;
  decltype(&::MPI_Finalized) finalized;
  decltype(&::MPI_Init_thread) init_thread;
  decltype(&::MPI_Query_thread) query_thread;
  decltype(&::MPI_Finalize) finalize;
  decltype(&::MPI_Error_string) error_string;
  decltype(&::MPI_Get_library_version) get_library_version;
  decltype(&::MPI_Comm_dup) comm_dup;
  decltype(&::MPI_Comm_free) comm_free;
  decltype(&::MPI_Comm_rank) comm_rank;
  decltype(&::MPI_Comm_size) comm_size;
  decltype(&::MPI_Comm_set_errhandler) comm_set_errhandler;
  decltype(&::MPI_Comm_group) comm_group;
  decltype(&::MPI_Comm_create_group) comm_create_group;
  decltype(&::MPI_Group_incl) group_incl;
  decltype(&::MPI_Group_free) group_free;
  decltype(&::MPI_Op_create) op_create;
  decltype(&::MPI_Op_free) op_free;
  decltype(&::MPI_Allreduce) allreduce;
  decltype(&::MPI_Bcast) bcast;
  decltype(&::MPI_Allgatherv) allgatherv;
  decltype(&::MPI_Alltoallv) alltoallv;
  decltype(&::MPI_Reduce_scatter_block) reduce_scatter_block;
  decltype(&::MPI_Reduce_scatter) reduce_scatter;
  decltype(&::MPI_Barrier) barrier;

  MPI_Comm comm_world;
  MPI_Comm comm_null;
  MPI_Group group_null;
  MPI_Errhandler errors_return;
  MPI_Op op_null, sum, min, max, prod;
  MPI_Datatype byte, uint8, int8, int32, int64, uint16, float32, float64;
};

// Open MPI's soname, the one Debian's libopenmpi3 (Open MPI 4) and Open MPI 5 install.
inline constexpr const char* kMpiLibrary = "libmpi.so.40";

// Loads `soname` (by the loader's search: LD_LIBRARY_PATH, the cache, the system's folders) and
// resolves every entry. Throws Error naming the library, what is missing and the loader's reason,
// e.g. "the job was started by mpirun, but Open MPI's library libmpi.so.40 cannot be loaded:
// ... (install Open MPI, apt-get install libopenmpi3, or start the job with cohortrun)". The
// library stays loaded for the life of the process.
MpiLibrary load_mpi_library(const char* soname);

// The process's MPI library, loaded from kMpiLibrary on first use (thread-safe; afterwards a
// call costs a check of the guard); throws as load_mpi_library does, every time it is asked
// while it cannot be loaded.
const MpiLibrary& mpi();

}  // namespace cohort::ops
