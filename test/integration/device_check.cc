// Device tensors through the engine, under cohortrun with 2 ranks (NCCL builds only).
// With a CUDA device per rank: allreduce and broadcast of device memory are checked against host
// results. Without one (this project's CI): every rank gets a clear error for the device
// collective and the runtime goes on. Either way, the device-tensor argument checks hold.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "check.h"
#include "cohort/cohort.h"

using namespace cohort;
using namespace cohort::testing;

namespace {

int visible_devices() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

void check_argument_errors(Tensor device_tensor) {
  expect_error<InvalidArgument>(
      [&] { allreduce("device avg", device_tensor, {ReduceOp::kAverage}); },
      "without scale factors", "device average");
  expect_error<InvalidArgument>([&] { allgather("device gather", device_tensor); },
                                "allreduce and broadcast only", "device allgather");
  expect_error<InvalidArgument>([&] { reducescatter("device reducescatter", device_tensor); },
                                "allreduce and broadcast only", "device reducescatter");
}

void check_on_gpu(int device) {
  int me = cohort::rank(), n = cohort::size();
  std::vector<float> host(1024, static_cast<float>(me + 1));
  float* data = nullptr;
  check(cudaSetDevice(device) == cudaSuccess && cudaMalloc(&data, host.size() * 4) == cudaSuccess,
        "cudaMalloc");
  cudaMemcpy(data, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
  Tensor t{data, DataType::kFloat32, {1024}, device};
  check_argument_errors(t);
  allreduce("device sum", t);
  cudaMemcpy(host.data(), data, host.size() * 4, cudaMemcpyDeviceToHost);
  check(host[0] == static_cast<float>(n * (n + 1) / 2), "device allreduce sum");
  broadcast("device broadcast", t, n - 1);
  cudaMemcpy(host.data(), data, host.size() * 4, cudaMemcpyDeviceToHost);
  check(host[1023] == static_cast<float>(n * (n + 1) / 2), "device broadcast");
  cudaFree(data);
}

void check_without_gpu() {
  std::vector<float> never_touched(16);
  Tensor t{never_touched.data(), DataType::kFloat32, {16}, 0};
  check_argument_errors(t);
  expect_error<Error>([&] { allreduce("device sum", t); },
                      "no NCCL communicator for device tensors", "device allreduce without a GPU");
  std::vector<float> host(4, 1.0f);
  allreduce("host after device failure", Tensor::of(host));
  check(host[0] == static_cast<float>(cohort::size()), "the runtime goes on");
}

}  // namespace

int main() {
  g_program = "device_check";
  cohort::init();
  int devices = visible_devices();
  bool gpus = devices >= cohort::local_size();
  // Every rank must take the same path.
  std::vector<int32_t> have{gpus ? 1 : 0};
  allreduce("have gpus", Tensor::of(have), {ReduceOp::kMin});
  if (have[0] == 1) {
    check_on_gpu(cohort::local_rank());
  } else {
    check_without_gpu();
  }
  cohort::shutdown();
  std::cout << "device_check: " << g_checks << " checks passed ("
            << (have[0] == 1 ? "on GPUs" : "no GPU: error paths") << ")" << std::endl;
  return 0;
}
