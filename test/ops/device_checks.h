// Test helpers for device backends on a real GPU (CUDA builds): device copies of host buffers, a
// wrapper that runs a device backend on host buffers (so the host-side checks of
// collective_matrix.h and backend_checks.h run unchanged), and the checks of the DeviceBackend's
// own operations (scaled sums, allocate). Used by nccl_backend_check.cc and staged_gpu_check.cc.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "cohort/errors.h"
#include "ops/device_backend.h"
#include "ops/half.h"

namespace cohort::ops::testing {

inline void cuda(cudaError_t rc, const char* call) {
  if (rc != cudaSuccess)
    throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(rc));
}

// Device memory holding a copy of host bytes, copied back on request.
class DeviceCopy {
 public:
  DeviceCopy(const void* host, size_t bytes) : bytes_(bytes) {
    if (bytes_ == 0) return;
    cuda(cudaMalloc(&device_, bytes_), "cudaMalloc");
    if (host != nullptr) cuda(cudaMemcpy(device_, host, bytes_, cudaMemcpyHostToDevice), "H2D");
  }
  ~DeviceCopy() { cudaFree(device_); }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
  void* get() const { return device_; }
  void copy_to(void* host) const {
    if (bytes_ > 0) cuda(cudaMemcpy(host, device_, bytes_, cudaMemcpyDeviceToHost), "D2H");
  }

 private:
  void* device_ = nullptr;
  size_t bytes_;
};

// The NCCL backend seen through host memory, so the host-side checks of collective_matrix.h run
// unchanged: every call copies its buffers to the device, runs there and copies the results back.
class HostStaged final : public Backend {
 public:
  explicit HostStaged(std::unique_ptr<Backend> device) : device_(std::move(device)) {}
  std::string_view name() const override { return device_->name(); }
  int rank() const override { return device_->rank(); }
  int size() const override { return device_->size(); }

  void allreduce(void* buffer, size_t count, DataType d, ReduceOp op,
                 const BufferBinding& binding) override {
    DeviceCopy staged(buffer, count * element_size(d));
    device_->allreduce(staged.get(), count, d, op, binding);
    staged.copy_to(buffer);
  }
  void broadcast(void* buffer, size_t bytes, int root) override {
    DeviceCopy staged(buffer, bytes);
    device_->broadcast(staged.get(), bytes, root);
    staged.copy_to(buffer);
  }
  void allgatherv(const void* input, void* output, std::span<const size_t> counts) override {
    DeviceCopy in(input, counts[rank()]);
    DeviceCopy out(nullptr, std::accumulate(counts.begin(), counts.end(), size_t{0}));
    device_->allgatherv(in.get(), out.get(), counts);
    out.copy_to(output);
  }
  void barrier() override { device_->barrier(); }
  void alltoallv(const void* input, std::span<const size_t> sends, void* output,
                 std::span<const size_t> receives) override {
    DeviceCopy in(input, std::accumulate(sends.begin(), sends.end(), size_t{0}));
    DeviceCopy out(nullptr, std::accumulate(receives.begin(), receives.end(), size_t{0}));
    device_->alltoallv(in.get(), sends, out.get(), receives);
    out.copy_to(output);
  }
  void reduce_scatter(const void* input, void* output, std::span<const size_t> counts, DataType d,
                      ReduceOp op) override {
    size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    DeviceCopy in(input, total * element_size(d));
    DeviceCopy out(nullptr, counts[rank()] * element_size(d));
    device_->reduce_scatter(in.get(), out.get(), counts, d, op);
    out.copy_to(output);
  }
  std::unique_ptr<Backend> split(std::span<const int> ranks, const std::string& key) override {
    return std::make_unique<HostStaged>(device_->split(ranks, key));
  }

 private:
  std::unique_ptr<Backend> device_;
};

inline int report(bool ok, int rank, const std::string& what) {
  if (!ok) std::printf("rank %d: FAILED: %s\n", rank, what.c_str());
  return ok ? 0 : 1;
}

// The DeviceBackend's own operations, which the engine uses for averages, scale factors and
// runtime-owned results: sums with a factor (float32, float16), and allocate(). Returns the
// number of failed checks.
inline int check_device_backend(DeviceBackend& b) {
  int n = b.size(), r = b.rank(), failures = 0;
  float ranks_sum = static_cast<float>(n * (n + 1) / 2);  // of the values r + 1
  std::vector<float> values(100, static_cast<float>(r + 1));
  DeviceCopy a(values.data(), values.size() * 4);
  b.allreduce_scaled(a.get(), values.size(), DataType::kFloat32, 0.5);
  a.copy_to(values.data());
  failures += report(values[99] == 0.5f * ranks_sum, r, "allreduce_scaled float32");

  std::vector<uint16_t> halves(64, float_to_float16(2.0f));
  DeviceCopy h(halves.data(), halves.size() * 2);
  b.allreduce_scaled(h.get(), halves.size(), DataType::kFloat16, 0.25);
  h.copy_to(halves.data());
  failures += report(float16_to_float(halves[63]) == 0.5f * static_cast<float>(n), r,
                     "allreduce_scaled float16");

  std::vector<size_t> counts(static_cast<size_t>(n), 3);
  std::vector<float> input(counts.size() * 3, static_cast<float>(r + 1)), block(3);
  DeviceCopy in(input.data(), input.size() * 4), out(nullptr, block.size() * 4);
  b.reduce_scatter_scaled(in.get(), out.get(), counts, DataType::kFloat32, 2.0);
  out.copy_to(block.data());
  failures += report(block[2] == 2.0f * ranks_sum, r, "reduce_scatter_scaled float32");

  try {
    b.allreduce_scaled(a.get(), 1, DataType::kInt32, 2.0);
    failures += report(false, r, "allreduce_scaled of int32 was accepted");
  } catch (const InvalidArgument&) {
  }
  std::shared_ptr<void> memory = b.allocate(1 << 20);
  bool usable = memory && cudaMemset(memory.get(), 0, 1 << 20) == cudaSuccess;
  failures += report(usable && b.allocate(0) == nullptr, r, "allocate");
  return failures;
}

}  // namespace cohort::ops::testing
