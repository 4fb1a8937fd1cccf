// Cohort's public API: joining the job, the world's shape, and the collectives.
//
// Every collective is named. Ranks may submit names in any order and from any thread; a
// collective runs once every rank has submitted its name, and all ranks run collectives in the
// same order. A name may be in flight only once per rank at a time.
//
// Tensors on a CUDA device (Tensor::device >= 0, NCCL builds only) go through NCCL, made for each
// process set on first use; each rank uses its own device (usually its local rank's), and the
// ranks must agree only on host versus device. Every collective takes them, with these limits:
// allreduce works in place (input = output); average and scale factors apply to sum and average
// of floating-point types, and are applied as one factor before the sum (prescale × postscale,
// divided by the size for an average: NCCL's PreMulSum); runtime-owned results (allgather,
// alltoall, reducescatter) are allocated on the same device (OwnedTensor::device_memory); device
// allreduces do not run while a rank has joined, and are not fused.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cohort/errors.h"
#include "cohort/handle.h"
#include "cohort/types.h"

namespace cohort {

// Joins the job: reads COHORT_* settings from the environment (see docs/environment.md), detects
// the launcher (cohortrun → Gloo, mpirun → MPI, none → a world of one) and connects to every other
// rank. Calling it again while initialized does nothing, unless the other ranks have left this
// runtime (they shut down while a collective here waited for them, which failed): then it shuts
// this one down, as they wait for, and joins them afresh.
// SIGPIPE, SIGUSR1 and SIGUSR2 that still have their default action (which ends the process) are
// ignored from then on: launchers pass SIGUSR1 and SIGUSR2 on to every worker (Slurm sends them
// ahead of preemption). A handler the program installed before init() stays
// (docs/operations.md, "Signals").
void init();
// Leaves the job: waits until every rank has called shutdown() (at most
// COHORT_SHUTDOWN_TIMEOUT_SECONDS), then releases everything. Pending handles fail with
// ShutdownError. init() may be called again afterwards, on every rank: the n-th init() of each
// process meets the others' n-th in a fresh rendezvous (under cohortrun, a new scope of keys; in
// an elastic job, a new round).
void shutdown();
// Whether init() has run and shutdown() has not since.
bool is_initialized();

// This process's rank in the world, from 0 to size() - 1.
int rank();
// The number of ranks in the world.
int size();
// This rank's index among the ranks on its host.
int local_rank();
// The number of ranks on this rank's host.
int local_size();
// This rank's index among the ranks with its local rank (one per host).
int cross_rank();
// The number of ranks with this rank's local rank.
int cross_size();
// "gloo", "mpi" or "none" (a world of one).
std::string_view backend_name();

// A name for a collective of `kind` submitted without one, as framework bindings do:
// "<kind>.noname.<n>", n counting this runtime's calls for that kind, so every rank must make its
// unnamed calls in the same order. The count starts again at 0 in each new runtime (init() after
// shutdown(), an elastic reset), so survivors and newly joined workers agree after a reset.
std::string default_name(std::string_view kind);

// A subset of the ranks that runs collectives among themselves, with its own negotiation. The
// default, id 0, is every rank. Results of a process set's collectives are ordered by its ranks
// in ascending order, and a broadcast's root is given as a global rank that must be a member.
struct ProcessSet {
  int id = 0;  // as returned by add_process_set()
};

// Called by every rank with the same sorted, distinct ranks (any order is accepted and sorted):
// creates the process set over them. Blocks until every rank has called it.
ProcessSet add_process_set(std::vector<int> ranks);
// Called by every rank with the same set (a collective of the world): removes the process set.
// Blocks until every rank has called it. The set's collectives that every member had submitted
// before the removal run first; those that some member had not fail with MismatchError naming
// the collective and the set. The id is never reused: using it afterwards throws InvalidArgument
// saying that the set was removed. The global set (id 0) cannot be removed (InvalidArgument).
void remove_process_set(ProcessSet set);
// The global ranks of a process set, ascending.
std::vector<int> process_set_ranks(ProcessSet set);

// How allreduce, grouped_allreduce and reducescatter reduce.
struct AllreduceOptions {
  ReduceOp op = ReduceOp::kSum;  // how the ranks' values combine
  // Multiplies the input before the reduction and the result after it (average multiplies the
  // result by a further 1/size of the process set). Integer results truncate, as Horovod's.
  double prescale = 1.0;
  double postscale = 1.0;  // see prescale
  ProcessSet process_set;  // the ranks that take part; all of them by default
};

// Reduces `input` across ranks into `output` (which may be `input`); shapes and dtypes must match.
Handle allreduce_async(std::string name, Tensor input, Tensor output,
                       AllreduceOptions options = {});
// allreduce_async(), then waits for it.
void allreduce(std::string name, Tensor input, Tensor output, AllreduceOptions options = {});
// In place: `inout` is both the input and the output.
inline Handle allreduce_async(std::string name, Tensor inout, AllreduceOptions options = {}) {
  return allreduce_async(std::move(name), inout, inout, options);
}
// In place, and waits.
inline void allreduce(std::string name, Tensor inout, AllreduceOptions options = {}) {
  allreduce(std::move(name), inout, inout, options);
}

// Reduces every tensor of `tensors` in place, as one unit: the group is negotiated as one
// collective named `name` and its members are fused together, and the handle completes when all
// of them have. Every rank must pass the same number of tensors with matching shapes and types
// (a mismatch names the member); the tensors must all be on one device.
Handle grouped_allreduce_async(std::string name, const std::vector<Tensor>& tensors,
                               AllreduceOptions options = {});
// grouped_allreduce_async(), then waits for it.
void grouped_allreduce(std::string name, const std::vector<Tensor>& tensors,
                       AllreduceOptions options = {});

// Overwrites `buffer` on every rank with `root`'s.
Handle broadcast_async(std::string name, Tensor buffer, int root, ProcessSet set = {});
// broadcast_async(), then waits for it.
void broadcast(std::string name, Tensor buffer, int root, ProcessSet set = {});

// Concatenates every rank's `input` along the first dimension, in rank order. The first
// dimension may differ between ranks; the others must match. The result is in Handle::output().
Handle allgather_async(std::string name, Tensor input, ProcessSet set = {});
// allgather_async(), then waits for it and returns its output.
OwnedTensor allgather(std::string name, Tensor input, ProcessSet set = {});

// Sends rows of `input` (along its first dimension) to every rank of the set: splits[j] rows, in
// order, to the set's j-th rank. Empty splits divide the first dimension evenly (it must then be
// a multiple of the set's size). The result, in Handle::output(), concatenates in rank order the
// rows every rank sent to this one; Handle::received_splits() says how many came from each.
// Ranks may send different numbers of rows; dtypes and the other dimensions must match.
Handle alltoall_async(std::string name, Tensor input, std::vector<int64_t> splits = {},
                      ProcessSet set = {});
// What alltoall() returns: Handle::output() and Handle::received_splits().
struct AlltoallResult {
  OwnedTensor output;                    // the rows received, in rank order
  std::vector<int64_t> received_splits;  // how many rows came from each rank
};
// alltoall_async(), then waits for it.
AlltoallResult alltoall(std::string name, Tensor input, std::vector<int64_t> splits = {},
                        ProcessSet set = {});

// Reduces `input` (same shape on every rank) like allreduce and gives each rank one block of the
// result along the first dimension, in Handle::output(). The first dimension is split as evenly
// as possible: with d rows over n ranks, rank r gets d / n rows, plus one if r < d % n (so the
// first ranks get the extra rows, and a rank may get none).
Handle reducescatter_async(std::string name, Tensor input, AllreduceOptions options = {});
// reducescatter_async(), then waits for it and returns this rank's block.
OwnedTensor reducescatter(std::string name, Tensor input, AllreduceOptions options = {});

// Bytes from `root` to every rank of the set (their size is broadcast first, under `name` +
// ".size", then the bytes under `name` + ".bytes"); the other ranks' `bytes` are ignored.
std::string broadcast_bytes(std::string bytes, int root, std::string name, ProcessSet set = {});
// Every rank's bytes, in rank order, on every rank of the set; sizes may differ between ranks.
std::vector<std::string> allgather_bytes(std::string bytes, std::string name, ProcessSet set = {});

// Returns once every rank has reached the barrier of the same name.
Handle barrier_async(std::string name = "cohort.barrier", ProcessSet set = {});
// barrier_async(), then waits for it.
void barrier(std::string name = "cohort.barrier", ProcessSet set = {});

// For a rank that has run out of data while the others have not. Blocks until every rank has
// called join(); meanwhile the other ranks' allreduces (of the whole world) go on, with this
// rank contributing the reduction's identity (zeros for sum and average; average still divides
// by the full world size) to every allreduce it does not submit. Any other collective submitted
// while some rank has joined fails with MismatchError naming the joined ranks, and a joined rank
// may not submit anything but its join. Returns the rank that joined last.
int join();

}  // namespace cohort
