#include "ops/mpi_library.h"

#include <dlfcn.h>

#include <string>
#include <utility>

#include "cohort/errors.h"

namespace cohort::ops {
namespace {

[[noreturn]] void unusable(const std::string& soname, const std::string& why) {
  throw Error("the job was started by mpirun, but Open MPI's library " + soname +
              " cannot be used: " + why +
              " (install Open MPI, e.g. apt-get install libopenmpi3, or start the job with "
              "cohortrun)");
}

// Looks up `name` in `library`; the entry's type is what the caller assigns it to.
class Resolver {
 public:
  Resolver(void* library, std::string soname) : library_(library), soname_(std::move(soname)) {}

  template <typename T>
  void function(T& entry, const char* name) const {
    entry = reinterpret_cast<T>(symbol(name));
  }
  // A predefined handle: Open MPI's MPI_COMM_WORLD is `(MPI_Comm)&ompi_mpi_comm_world`.
  template <typename Handle>
  void handle(Handle& entry, const char* global) const {
    entry = reinterpret_cast<Handle>(symbol(global));
  }

 private:
  void* symbol(const char* name) const {
    dlerror();
    void* address = dlsym(library_, name);
    if (address == nullptr) {
      const char* reason = dlerror();
      unusable(soname_, std::string("it has no symbol ") + name + " (" +
                            (reason != nullptr ? reason : "a null address") +
                            "); it is not the Open MPI Cohort was built for");
    }
    return address;
  }

  void* library_;
  std::string soname_;
};

void resolve_functions(const Resolver& r, MpiLibrary& m) {
  r.function(m.initialized, "MPI_Initialized");
  r.function(m.finalized, "MPI_Finalized");
  r.function(m.init_thread, "MPI_Init_thread");
  r.function(m.query_thread, "MPI_Query_thread");
  r.function(m.finalize, "MPI_Finalize");
  r.function(m.error_string, "MPI_Error_string");
  r.function(m.get_library_version, "MPI_Get_library_version");
  r.function(m.comm_dup, "MPI_Comm_dup");
  r.function(m.comm_free, "MPI_Comm_free");
  r.function(m.comm_rank, "MPI_Comm_rank");
  r.function(m.comm_size, "MPI_Comm_size");
  r.function(m.comm_set_errhandler, "MPI_Comm_set_errhandler");
  r.function(m.comm_group, "MPI_Comm_group");
  r.function(m.comm_create_group, "MPI_Comm_create_group");
  r.function(m.group_incl, "MPI_Group_incl");
  r.function(m.group_free, "MPI_Group_free");
  r.function(m.op_create, "MPI_Op_create");
  r.function(m.op_free, "MPI_Op_free");
  r.function(m.allreduce, "MPI_Allreduce");
  r.function(m.bcast, "MPI_Bcast");
  r.function(m.allgatherv, "MPI_Allgatherv");
  r.function(m.alltoallv, "MPI_Alltoallv");
  r.function(m.reduce_scatter_block, "MPI_Reduce_scatter_block");
  r.function(m.reduce_scatter, "MPI_Reduce_scatter");
  r.function(m.barrier, "MPI_Barrier");
}

// The globals behind Open MPI's predefined handles (its mpi.h: OMPI_PREDEFINED_GLOBAL).
void resolve_handles(const Resolver& r, MpiLibrary& m) {
  r.handle(m.comm_world, "ompi_mpi_comm_world");
  r.handle(m.comm_null, "ompi_mpi_comm_null");
  r.handle(m.group_null, "ompi_mpi_group_null");
  r.handle(m.errors_return, "ompi_mpi_errors_return");
  r.handle(m.op_null, "ompi_mpi_op_null");
  r.handle(m.sum, "ompi_mpi_op_sum");
  r.handle(m.min, "ompi_mpi_op_min");
  r.handle(m.max, "ompi_mpi_op_max");
  r.handle(m.prod, "ompi_mpi_op_prod");
  r.handle(m.byte, "ompi_mpi_byte");
  r.handle(m.uint8, "ompi_mpi_uint8_t");
  r.handle(m.int8, "ompi_mpi_int8_t");
  r.handle(m.int32, "ompi_mpi_int32_t");
  r.handle(m.int64, "ompi_mpi_int64_t");
  r.handle(m.uint16, "ompi_mpi_uint16_t");
  r.handle(m.float32, "ompi_mpi_float");
  r.handle(m.float64, "ompi_mpi_double");
}

}  // namespace

MpiLibrary load_mpi_library(const char* soname) {
  void* library = dlopen(soname, RTLD_NOW | RTLD_GLOBAL);
  if (library == nullptr) {
    const char* reason = dlerror();
    unusable(soname, reason != nullptr ? reason : "dlopen failed");
  }
  Resolver resolver(library, soname);
  MpiLibrary m{};
  resolve_functions(resolver, m);
  resolve_handles(resolver, m);
  return m;  // the library is never closed: MPI finalizes at exit (mpi_backend.cc)
}

const MpiLibrary& mpi() {
  // Loaded once, thread-safely; a load that throws leaves it unloaded, so the next call tries
  // again. Once loaded, a call costs the guard's check only: it is on every MPI call's path.
  static const MpiLibrary library = load_mpi_library(kMpiLibrary);
  return library;
}

}  // namespace cohort::ops
