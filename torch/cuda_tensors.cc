// The tensor bridge's CUDA part, compiled only when libtorch has CUDA and Cohort has NCCL
// (COHORT_TORCH_CUDA): CUDA tensors go to the runtime as device pointers on their device, once
// torch's current stream has produced them, and device results become CUDA tensors.
#include <c10/cuda/CUDAStream.h>

#include <memory>

#include "cohort/torch/collectives.h"
#include "cuda_tensors.h"

namespace cohort::torch::detail {

void check_cuda_tensor(const at::Tensor& tensor, const std::string& where) {
  if (!tensor.is_cuda() || tensor.device().has_index()) return;
  // A tensor always carries its index; a bare "cuda" device would leave Cohort's device unknown.
  throw InvalidArgument(where + "CUDA tensor without a device index");
}

int device_index(const at::Tensor& tensor) {
  return tensor.is_cuda() ? tensor.device().index() : kCpuDevice;
}

void wait_for_producer(const at::Tensor& tensor) {
  if (!tensor.is_cuda()) return;
  // The NCCL backend runs on a stream of its own and orders itself only after the legacy default
  // stream, so torch's work on its current stream (the producer, and the staging copies made just
  // before) must be finished first. A host wait is simple and always right. An event recorded on
  // torch's stream and waited on by the backend's stream would spare the host this wait, but the
  // core has no hook for it yet: it would have to take the stream the framework produced the
  // tensor on.
  c10::cuda::getCurrentCUDAStream(tensor.device().index()).synchronize();
}

at::Tensor wrap_device_result(const OwnedTensor& owned) {
  // No copy: torch's tensor holds the runtime's allocation (cudaMalloc, not torch's caching
  // allocator) through the deleter, which drops the last reference when torch frees the tensor.
  // The runtime completed the handle once the result was in memory, so any stream may read it.
  std::shared_ptr<void> memory = owned.device_memory;
  at::Device device(at::kCUDA, static_cast<c10::DeviceIndex>(owned.device));
  return at::for_blob(memory.get(), at::IntArrayRef(owned.shape))
      .deleter([memory](void*) mutable { memory.reset(); })
      .options(at::TensorOptions().dtype(to_torch(owned.dtype)).device(device))
      .target_device(device)  // the device is known: no pointer lookup (an empty result has none)
      .make_tensor();
}

}  // namespace cohort::torch::detail
