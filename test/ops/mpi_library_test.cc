// ops/mpi_library.h against the real Open MPI of this machine, and against libraries that are not
// it: a library that cannot be loaded and one without MPI's symbols give one precise error each.
#include "ops/mpi_library.h"

#include <catch2/catch.hpp>

#include <string>

#include "cohort/errors.h"

namespace cohort::ops {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("Open MPI's library loads and every entry resolves", "[mpi_library]") {
  MpiLibrary m = load_mpi_library(kMpiLibrary);
  CHECK(m.init_thread != nullptr);
  CHECK(m.allreduce != nullptr);
  CHECK(m.barrier != nullptr);
  CHECK(m.comm_world != nullptr);
  CHECK(m.sum != m.max);
  CHECK(m.float32 != m.float64);
  // Callable before MPI_Init: the library says what it is.
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  REQUIRE(m.get_library_version(version, &length) == MPI_SUCCESS);
  CHECK_THAT(std::string(version, static_cast<size_t>(length)), Contains("Open MPI"));
  int initialized = 1;
  REQUIRE(m.initialized(&initialized) == MPI_SUCCESS);
  CHECK(initialized == 0);
}

TEST_CASE("the process's library is loaded once", "[mpi_library]") {
  CHECK(&mpi() == &mpi());
  CHECK(mpi().comm_world == load_mpi_library(kMpiLibrary).comm_world);
}

TEST_CASE("a library that cannot be loaded is named, with the loader's reason", "[mpi_library]") {
  CHECK_THROWS_AS(load_mpi_library("libmpi-not-here.so.40"), Error);
  CHECK_THROWS_WITH(
      load_mpi_library("libmpi-not-here.so.40"),
      Contains("the job was started by mpirun, but Open MPI's library libmpi-not-here.so.40 cannot "
               "be used: libmpi-not-here.so.40: cannot open shared object file"));
  CHECK_THROWS_WITH(load_mpi_library("libmpi-not-here.so.40"),
                    Contains("apt-get install libopenmpi3, or start the job with cohortrun"));
}

TEST_CASE("a library without MPI's symbols is refused, naming the first missing one",
          "[mpi_library]") {
  CHECK_THROWS_WITH(load_mpi_library("libm.so.6"),
                    Contains("Open MPI's library libm.so.6 cannot be used: it has no symbol "
                             "MPI_Initialized") &&
                        Contains("it is not the Open MPI Cohort was built for"));
}

}  // namespace
}  // namespace cohort::ops
