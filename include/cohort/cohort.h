// Cohort's public API: joining the job, the world's shape, and the collectives.
//
// Every collective is named. Ranks may submit names in any order and from any thread; a
// collective runs once every rank has submitted its name, and all ranks run collectives in the
// same order. A name may be in flight only once per rank at a time.
#pragma once

#include <string>
#include <string_view>

#include "cohort/errors.h"
#include "cohort/handle.h"
#include "cohort/types.h"

namespace cohort {

// Joins the job: reads COHORT_* settings from the environment (see docs/environment.md), detects
// the launcher (cohortrun → Gloo, mpirun → MPI, none → a world of one) and connects to every other
// rank. Calling it again while initialized does nothing.
void init();
// Leaves the job: waits until every rank has called shutdown() (at most
// COHORT_SHUTDOWN_TIMEOUT_SECONDS), then releases everything. Pending handles fail with
// ShutdownError. init() may be called again afterwards.
void shutdown();
bool is_initialized();

int rank();
int size();
int local_rank();
int local_size();
int cross_rank();
int cross_size();
// "gloo", "mpi" or "none" (a world of one).
std::string_view backend_name();

struct AllreduceOptions {
  ReduceOp op = ReduceOp::kSum;
  // Multiplies the input before the reduction and the result after it (average multiplies the
  // result by a further 1/size). Integer results are rounded to nearest.
  double prescale = 1.0;
  double postscale = 1.0;
};

// Reduces `input` across ranks into `output` (which may be `input`); shapes and dtypes must match.
Handle allreduce_async(std::string name, Tensor input, Tensor output,
                       AllreduceOptions options = {});
void allreduce(std::string name, Tensor input, Tensor output, AllreduceOptions options = {});
inline Handle allreduce_async(std::string name, Tensor inout, AllreduceOptions options = {}) {
  return allreduce_async(std::move(name), inout, inout, options);
}
inline void allreduce(std::string name, Tensor inout, AllreduceOptions options = {}) {
  allreduce(std::move(name), inout, inout, options);
}

// Overwrites `buffer` on every rank with `root`'s.
Handle broadcast_async(std::string name, Tensor buffer, int root);
void broadcast(std::string name, Tensor buffer, int root);

// Concatenates every rank's `input` along the first dimension, in rank order. The first
// dimension may differ between ranks; the others must match. The result is in Handle::output().
Handle allgather_async(std::string name, Tensor input);
OwnedTensor allgather(std::string name, Tensor input);

// Returns once every rank has reached the barrier of the same name.
Handle barrier_async(std::string name = "cohort.barrier");
void barrier(std::string name = "cohort.barrier");

}  // namespace cohort
