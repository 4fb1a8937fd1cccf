// Cohort's collectives on libtorch tensors: at::Tensor in and out of every collective, blocking,
// asynchronous (a Work that keeps its tensors alive until it completes) and in place.
//
//   cohort::init();
//   at::Tensor avg = cohort::torch::allreduce(grad, {.op = cohort::ReduceOp::kAverage});
//   cohort::torch::allreduce_(grad);                       // in place
//   auto work = cohort::torch::allgather_async(features);  // ... later: work.wait()
//
// Names: every collective is named; an empty name takes cohort::default_name(op),
// "<op>.noname.<n>", with n counting the runtime's unnamed calls of that kind, as Horovod does (so
// unnamed calls must come in the same order on every rank; the count restarts after a reset).
// Dtypes: uint8, int8, int32, int64, float16, bfloat16, float32, float64 and bool map to Cohort's
// types; int16, which Cohort has not, goes through the collectives that only move data (allgather,
// broadcast, alltoall) as 2-byte elements (a rank giving int16 where another gives float16 is not
// detected); any other (complex, ...), and int16 in a reduction, is refused with InvalidArgument
// naming it. A
// non-contiguous tensor is copied into a contiguous one for the collective, and an in-place result
// is copied back into it. Tensors that require grad are read and written outside autograd;
// an in-place collective bumps its tensor's version counter, as torch's in-place ops do, and with
// grad mode on refuses a leaf that requires grad (or a view of one) with InvalidArgument. CPU
// tensors go through Gloo or MPI. CUDA tensors depend on the build. Built against a libtorch with
// CUDA and a Cohort with NCCL, the adapter hands a CUDA tensor's device pointer to NCCL on its
// device (its index is the cohort::Tensor device) after the host has waited for torch's current
// stream on that device, staging copies of non-contiguous tensors included; results the runtime
// allocates (allgather, alltoall, reducescatter) come back as CUDA tensors over its memory, without
// a copy; an out-of-place allreduce reduces a copy in place; a grouped call mixing devices (CPU and
// CUDA) is refused with InvalidArgument; the core's limits on device tensors apply
// (cohort/cohort.h). Otherwise (Debian's libtorch has no CUDA; or Cohort has no NCCL) every CUDA
// tensor is refused with InvalidArgument, as nothing could order the collective after torch's
// stream. Either way the helpers that read host memory (optimizer state bytes, TorchState) take CPU
// tensors only. The namespace is cohort::torch, so code inside `using namespace cohort` names
// libtorch with a leading `::`.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/cohort.h"

namespace cohort::torch {

// The Cohort type of a torch dtype; InvalidArgument naming the dtype if Cohort has none.
DataType to_cohort(at::ScalarType dtype);
// The libtorch dtype (at::ScalarType) of a Cohort type.
at::ScalarType to_torch(DataType dtype);

// An asynchronous collective on torch tensors. It holds the tensors it reads and writes until it
// completes, so the caller may drop its own references. Copies share one collective. Dropping the
// last copy before the collective completed does not block: the collective completes in the
// background, its tensors kept alive until then, and its result (or error) is discarded.
class Work {
 public:
  Work() = default;
  // True once the collective has completed or failed; never blocks.
  bool poll() const;
  // Waits, then returns the result: the output tensor (for allreduce and broadcast, the tensor
  // written; for an in-place call, the caller's tensor). Rethrows the collective's error.
  at::Tensor wait() const;
  // Grouped allreduce: waits, then returns every member's result, in the order given.
  std::vector<at::Tensor> wait_all() const;
  // Alltoall: waits, then returns how many rows came from each rank (an int64 tensor).
  at::Tensor received_splits() const;
  // The collective's name.
  const std::string& name() const;

  // \cond internal: made by the collectives below
  struct State;  // the handle, the tensors kept alive and how to finish
  explicit Work(std::shared_ptr<State> state);
  // \endcond

 private:
  std::shared_ptr<State> state_;
};

// Allreduce into a new tensor (input untouched).
Work allreduce_async(const at::Tensor& input, AllreduceOptions options = {}, std::string name = {});
// allreduce_async(), then waits: the reduced tensor.
at::Tensor allreduce(const at::Tensor& input, AllreduceOptions options = {}, std::string name = {});
// Allreduce in place.
Work allreduce_async_(const at::Tensor& tensor, AllreduceOptions options = {},
                      std::string name = {});
// allreduce_async_(), then waits: `tensor`, reduced.
at::Tensor allreduce_(const at::Tensor& tensor, AllreduceOptions options = {},
                      std::string name = {});

// One grouped allreduce of every tensor (negotiated and fused as one), into new tensors.
Work grouped_allreduce_async(const std::vector<at::Tensor>& inputs, AllreduceOptions options = {},
                             std::string name = {});
// grouped_allreduce_async(), then waits: the reduced tensors, in the order given.
std::vector<at::Tensor> grouped_allreduce(const std::vector<at::Tensor>& inputs,
                                          AllreduceOptions options = {}, std::string name = {});
// One grouped allreduce of every tensor, in place.
Work grouped_allreduce_async_(const std::vector<at::Tensor>& tensors, AllreduceOptions options = {},
                              std::string name = {});
// grouped_allreduce_async_(), then waits: `tensors`, reduced.
std::vector<at::Tensor> grouped_allreduce_(const std::vector<at::Tensor>& tensors,
                                           AllreduceOptions options = {}, std::string name = {});

// Concatenation of every rank's tensor along the first dimension (which may differ), in rank order.
Work allgather_async(const at::Tensor& input, std::string name = {}, ProcessSet set = {});
// allgather_async(), then waits: the concatenation.
at::Tensor allgather(const at::Tensor& input, std::string name = {}, ProcessSet set = {});

// Root's tensor, into a new tensor (`input` untouched; its shape and dtype must match root's).
Work broadcast_async(const at::Tensor& input, int root, std::string name = {}, ProcessSet set = {});
// broadcast_async(), then waits: a copy of root's tensor.
at::Tensor broadcast(const at::Tensor& input, int root, std::string name = {}, ProcessSet set = {});
// Root's tensor, in place.
Work broadcast_async_(const at::Tensor& tensor, int root, std::string name = {},
                      ProcessSet set = {});
// broadcast_async_(), then waits: `tensor`, now equal to root's.
at::Tensor broadcast_(const at::Tensor& tensor, int root, std::string name = {},
                      ProcessSet set = {});

// Rows of `input` to every rank: splits[j] rows to the set's j-th rank (empty: even split).
// `splits` may be an int64/int32 tensor of one dimension, or undefined for an even split.
Work alltoall_async(const at::Tensor& input, const at::Tensor& splits = {}, std::string name = {},
                    ProcessSet set = {});
// The rows received, and how many came from each rank.
std::pair<at::Tensor, at::Tensor> alltoall(const at::Tensor& input, const at::Tensor& splits = {},
                                           std::string name = {}, ProcessSet set = {});

// Reduce, then this rank's block of the first dimension (cohort::reducescatter's split).
Work reducescatter_async(const at::Tensor& input, AllreduceOptions options = {},
                         std::string name = {});
// reducescatter_async(), then waits: this rank's block.
at::Tensor reducescatter(const at::Tensor& input, AllreduceOptions options = {},
                         std::string name = {});

// As cohort::barrier: returns once every rank of the set has reached it.
void barrier(ProcessSet set = {});
// As cohort::join: this rank ran out of data; returns the rank that joined last.
int join();

}  // namespace cohort::torch
