// The tensor bridge's CUDA part for builds without the CUDA tensor path (a libtorch without CUDA,
// such as Debian's, or a Cohort without NCCL): CUDA tensors are refused before they reach the
// runtime, since nothing here can order a collective after torch's CUDA stream.
#include "cuda_tensors.h"

namespace cohort::torch::detail {

void check_cuda_tensor(const at::Tensor& tensor, const std::string& where) {
  if (!tensor.is_cuda()) return;
  throw InvalidArgument(where +
                        "CUDA tensor on a CPU-only build of torch/Cohort: this adapter was built "
                        "without its CUDA path (it needs a libtorch with CUDA and a Cohort with "
                        "NCCL), so it cannot order the collective after torch's CUDA stream; move "
                        "the tensor to the CPU");
}

int device_index(const at::Tensor& /*tensor*/) {
  // check_cuda_tensor() let no CUDA tensor through.
  return kCpuDevice;
}

void wait_for_producer(const at::Tensor& /*tensor*/) {}

at::Tensor wrap_device_result(const OwnedTensor& /*owned*/) {
  throw InvalidArgument("cohort.torch: a device result cannot be wrapped by this CPU-only build");
}

}  // namespace cohort::torch::detail
