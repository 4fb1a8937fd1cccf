// Private to the torch adapter: the part of the tensor bridge that differs between a build with
// the CUDA tensor path (a libtorch with CUDA and a Cohort with NCCL: cuda_tensors.cc) and every
// other build (no_cuda_tensors.cc, which refuses CUDA tensors). CMake compiles exactly one of the
// two, so the callers carry no #if.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "cohort/cohort.h"

namespace cohort::torch::detail {

// Throws InvalidArgument, its message starting with `where`, when this build cannot take the CUDA
// tensor `tensor`.
void check_cuda_tensor(const at::Tensor& tensor, const std::string& where);

// Cohort's device of a checked tensor (cohort::Tensor::device): its CUDA device index, or
// kCpuDevice for a CPU tensor.
int device_index(const at::Tensor& tensor);

// Blocks the host until torch's current stream on `tensor`'s device has run everything queued on
// it so far, so that the runtime's own stream reads finished memory. Nothing for a CPU tensor.
void wait_for_producer(const at::Tensor& tensor);

// A torch tensor on the result's CUDA device over a runtime-owned device result, without a copy.
at::Tensor wrap_device_result(const OwnedTensor& owned);

}  // namespace cohort::torch::detail
