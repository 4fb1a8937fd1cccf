// Helpers of the GPU check programs: device memory filled from host bytes, read back, and
// compared element by element with the result of the same collective on host memory; inputs of
// every DataType as collective_matrix.h makes them (small integers, exact in every type).
// `--probe` support: a one-line reason and exit status 77 when no CUDA device is usable.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "check.h"
#include "cohort/cohort.h"
#include "test/ops/collective_matrix.h"

namespace cohort::testing {

inline int g_device = 0;  // the CUDA device this rank's device tensors live on
// A rehearsal without a GPU: "device" memory is host memory (g_device = kCpuDevice), so the
// program's own logic (names, shapes, options, comparisons) runs on any machine.
inline bool g_rehearsal = false;

inline void cuda_ok(cudaError_t rc, const char* call) {
  if (rc != cudaSuccess) fail(std::string(call) + ": " + cudaGetErrorString(rc));
}

// The number of usable CUDA devices, 0 without a driver or a device (the reason in `why`).
inline int usable_devices(std::string& why) {
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc);
    return 0;
  }
  if (count == 0) why = "no CUDA device is visible";
  return count;
}

// For `PROGRAM --probe`, run before the launcher (cohortrun turns a worker's 77 into 1): exits
// 77 with a one-line reason when no CUDA device is usable, 0 otherwise.
[[noreturn]] inline void probe_and_exit(const char* program) {
  std::string why;
  if (usable_devices(why) > 0) std::exit(0);
  std::printf("%s: skipped: %s\n", program, why.c_str());
  std::exit(77);
}

inline std::vector<std::byte> to_host(const void* device_data, size_t bytes) {
  std::vector<std::byte> host(bytes);
  if (bytes == 0) return host;
  if (g_rehearsal) {
    std::memcpy(host.data(), device_data, bytes);
  } else {
    cuda_ok(cudaMemcpy(host.data(), device_data, bytes, cudaMemcpyDeviceToHost), "D2H");
  }
  return host;
}

// Device memory holding a copy of host bytes, freed at scope exit.
class DeviceMemory {
 public:
  explicit DeviceMemory(const std::vector<std::byte>& host) : bytes_(host.size()) {
    if (g_rehearsal) {
      rehearsal_copy_ = host;
      data_ = rehearsal_copy_.data();
      return;
    }
    cuda_ok(cudaSetDevice(g_device), "cudaSetDevice");
    if (bytes_ == 0) return;
    cuda_ok(cudaMalloc(&data_, bytes_), "cudaMalloc");
    cuda_ok(cudaMemcpy(data_, host.data(), bytes_, cudaMemcpyHostToDevice), "H2D");
  }
  ~DeviceMemory() {
    if (data_ != nullptr && !g_rehearsal) cudaFree(data_);
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  Tensor tensor(DataType d, Shape shape) const { return {data_, d, std::move(shape), g_device}; }
  std::vector<std::byte> read() const { return to_host(data_, bytes_); }

 private:
  void* data_ = nullptr;
  size_t bytes_;
  std::vector<std::byte> rehearsal_copy_;  // the memory itself in a rehearsal
};

// `count` elements of rank `rank`'s inputs for `op` (collective_matrix.h's values), shifted by
// `salt` so that different collectives see different data.
inline std::vector<std::byte> inputs(DataType d, ReduceOp op, int rank, size_t count,
                                     int salt = 0) {
  std::vector<std::byte> bytes(count * element_size(d));
  ReduceOp values_of = op == ReduceOp::kAverage ? ReduceOp::kSum : op;
  for (size_t i = 0; i < count; ++i) {
    ops::testing::store(d, bytes.data(), i,
                        ops::testing::input_value(d, values_of, rank + salt, i));
  }
  return bytes;
}

// Host bytes against device bytes of the same collective: fails naming the first element that
// differs, with both values.
inline void same(const std::vector<std::byte>& host, const std::vector<std::byte>& device,
                 DataType d, const std::string& what) {
  if (host.size() != device.size()) {
    fail(what + ": host result has " + std::to_string(host.size()) + " bytes, device result " +
         std::to_string(device.size()));
  }
  size_t count = host.size() / element_size(d);
  for (size_t i = 0; i < count; ++i) {
    double h = ops::testing::load(d, host.data(), i);
    double g = ops::testing::load(d, device.data(), i);
    if (h != g) {
      fail(what + ": element " + std::to_string(i) + " is " + std::to_string(g) +
           " on the device, " + std::to_string(h) + " on the host");
    }
  }
  check(true, what);
}

// A runtime-owned device result against the host's: on this rank's device, same shape, same
// elements.
inline void same(const OwnedTensor& host, const OwnedTensor& device, const std::string& what) {
  check(device.device == g_device && (g_rehearsal || device.bytes.empty()),
        what + ": the result is not on device " + std::to_string(g_device));
  check(device.shape == host.shape && device.dtype == host.dtype,
        what + ": shape " + to_string(device.shape) + " on the device, " + to_string(host.shape) +
            " on the host");
  same(host.bytes, to_host(device.data(), device.num_bytes()), host.dtype, what);
}

inline bool is_floating(DataType d) {
  return d == DataType::kFloat16 || d == DataType::kBFloat16 || d == DataType::kFloat32 ||
         d == DataType::kFloat64;
}

}  // namespace cohort::testing
