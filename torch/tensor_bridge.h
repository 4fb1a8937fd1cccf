// Private to the torch adapter: the bridge between at::Tensor and cohort::Tensor (checks, views,
// copies of runtime-owned results), the registry that names unnamed collectives, and the state
// behind a Work.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "cohort/cohort.h"
#include "cohort/torch/collectives.h"
#include "dropped_work.h"

namespace cohort::torch::detail {

// Torch's user-facing name of a dtype ("complex64", "int16", ...), for error messages.
std::string dtype_name(at::ScalarType dtype);

// Throws InvalidArgument unless `tensor` can go through a collective: defined, dense, on the CPU
// or (with the CUDA path, see cuda_tensors.h) on a CUDA device, of a dtype Cohort has. `what`
// names the call in the message.
void check_tensor(const at::Tensor& tensor, std::string_view what);

// check_tensor(), and on the CPU: for the helpers that read or track host memory (optimizer state
// bytes, TorchState).
void check_host_tensor(const at::Tensor& tensor, std::string_view what);

// check_tensor() of every member of a grouped call, then InvalidArgument unless all are on one
// device.
void check_group(const std::vector<at::Tensor>& tensors, std::string_view what);

// A view of a contiguous, checked tensor's memory, on its device.
Tensor view_of(const at::Tensor& tensor);

// A torch tensor holding a runtime-owned result: a copy of a host result, or a CUDA tensor over a
// device result's memory.
at::Tensor to_tensor(const OwnedTensor& owned);

// `name`, or "<op>.noname.<n>" when it is empty (n counts this process's unnamed calls of `op`).
std::string name_or_default(std::string name, std::string_view op);

}  // namespace cohort::torch::detail

namespace cohort::torch {

// What a Work shares between its copies: the collective's handle, every tensor it reads or writes
// (kept alive until it completes), and how to turn the completed collective into its results.
struct Work::State {
  enum class Kind { kSingle, kGroup, kAlltoall };

  std::string name;
  Kind kind = Kind::kSingle;
  Handle handle;
  // Copies of a Work may wait from several threads: what follows is read and written with
  // `mutex` held (the handle is thread-safe of its own).
  Mutex mutex;
  std::vector<at::Tensor> keep GUARDED_BY(mutex);
  // Runs once, after the handle completed: copies in-place results back into non-contiguous
  // tensors, copies runtime-owned outputs into torch tensors. Returns the results.
  std::function<std::vector<at::Tensor>(const Handle&)> finish GUARDED_BY(mutex);
  bool finished GUARDED_BY(mutex) = false;
  std::vector<at::Tensor> results GUARDED_BY(mutex);

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  // A Work dropped before its collective completed does not wait for it: its handle and tensors
  // go to a background thread that keeps them until the collective completes (dropped_work.h).
  ~State() {
    if (finished || !finish || handle.poll()) return;
    detail::keep_until_done({std::move(handle), std::move(keep), std::move(finish)});
  }
};

}  // namespace cohort::torch
