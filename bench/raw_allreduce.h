// The baselines the allreduce benchmark compares Cohort against: the backend library called
// directly, with no negotiation, on the same buffers, in the same run.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cohort::bench {

class RawAllreduce {
 public:
  virtual ~RawAllreduce() = default;
  virtual std::string name() const = 0;
  // In-place float32 sum over `count` elements.
  virtual void run(float* buffer, size_t count) = 0;
  // Sizes below this are skipped (where the algorithm is far from competitive and disturbs the
  // measurements that follow it).
  virtual size_t min_bytes() const { return 0; }
};

// Connects a separate Gloo context through cohortrun's rendezvous and returns Gloo's allreduce
// algorithms: legacy halving-doubling (objects reused per buffer, as a careful user would),
// legacy ring-chunked, and the new-API ring.
std::vector<std::unique_ptr<RawAllreduce>> make_raw_gloo_allreduces();
// MPI_Allreduce on MPI_COMM_WORLD (the process must be an mpirun job; Cohort initializes MPI).
std::vector<std::unique_ptr<RawAllreduce>> make_raw_mpi_allreduces();

}  // namespace cohort::bench
