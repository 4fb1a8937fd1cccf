#include <mpi.h>

#include "raw_allreduce.h"

namespace cohort::bench {
namespace {

class MpiAllreduce final : public RawAllreduce {
 public:
  std::string name() const override { return "MPI_Allreduce"; }
  void run(float* buffer, size_t count) override {
    MPI_Allreduce(MPI_IN_PLACE, buffer, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  }
};

}  // namespace

std::vector<std::unique_ptr<RawAllreduce>> make_raw_mpi_allreduces() {
  std::vector<std::unique_ptr<RawAllreduce>> out;
  out.push_back(std::make_unique<MpiAllreduce>());
  return out;
}

}  // namespace cohort::bench
