#include "ops/cuda_copier.h"

#include <unistd.h>

#include <cstdio>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "cohort/errors.h"
#include "ops/cuda_call.h"

namespace cohort::ops {
namespace {

using Clock = std::chrono::steady_clock;

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

std::string uuid_text(const cudaUUID_t& uuid) {
  std::string text = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    text += hex;
  }
  return text;
}

class CudaCopier final : public DeviceCopier {
 public:
  CudaCopier(int device, std::chrono::milliseconds timeout) : device_(device), timeout_(timeout) {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    check_cuda(cudaStreamCreate(&stream_), "cudaStreamCreate");
  }

  ~CudaCopier() override {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);  // the staging memory may be freed next
    for (auto& [ticket, event] : pending_) cudaEventDestroy(event);
    for (cudaEvent_t event : idle_) cudaEventDestroy(event);
    cudaStreamDestroy(stream_);
    cudaGetLastError();  // leave no error behind for the owner's next CUDA call
  }

  int device() const override { return device_; }

  std::shared_ptr<void> allocate_device(size_t bytes) override {
    if (bytes == 0) return nullptr;
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    void* memory = nullptr;
    check_cuda(cudaMalloc(&memory, bytes), "cudaMalloc");
    return std::shared_ptr<void>(memory, [](void* p) { cudaFree(p); });
  }

  std::shared_ptr<void> allocate_host(size_t bytes) override {
    if (bytes == 0) return nullptr;
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    void* memory = nullptr;
    check_cuda(cudaMallocHost(&memory, bytes), "cudaMallocHost");
    return std::shared_ptr<void>(memory, [](void* p) { cudaFreeHost(p); });
  }

  void to_host(void* host, const void* device, size_t bytes) override {
    copy(host, device, bytes, cudaMemcpyDeviceToHost);
  }

  void to_device(void* device, const void* host, size_t bytes) override {
    copy(device, host, bytes, cudaMemcpyHostToDevice);
  }

  Marker mark() override {
    cudaEvent_t event = nullptr;
    if (idle_.empty()) {
      check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
    } else {
      event = idle_.back();
      idle_.pop_back();
    }
    cudaError_t rc = cudaEventRecord(event, stream_);
    if (rc != cudaSuccess) {
      idle_.push_back(event);
      check_cuda(rc, "cudaEventRecord");
    }
    pending_.emplace_back(++last_, event);
    return last_;
  }

  void wait(Marker marker) override {
    while (!pending_.empty() && pending_.front().first <= marker) {
      await(pending_.front().second);
      idle_.push_back(pending_.front().second);
      pending_.pop_front();
    }
  }

  void synchronize() override { wait(mark()); }

  std::unique_ptr<DeviceCopier> another() const override {
    return std::make_unique<CudaCopier>(device_, timeout_);
  }

 private:
  void copy(void* to, const void* from, size_t bytes, cudaMemcpyKind kind) {
    if (bytes == 0) return;
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    check_cuda(cudaMemcpyAsync(to, from, bytes, kind, stream_), "cudaMemcpyAsync");
  }

  // Polls `event` until it has happened, at most timeout_.
  void await(cudaEvent_t event) {
    auto deadline = Clock::now() + timeout_;
    PollBackoff backoff;
    for (;;) {
      cudaError_t rc = cudaEventQuery(event);
      if (rc == cudaSuccess) return;
      if (rc != cudaErrorNotReady) check_cuda(rc, "cudaEventQuery");
      if (Clock::now() > deadline) {
        throw InternalError("staged backend: a copy on CUDA device " + std::to_string(device_) +
                            " did not finish within " + std::to_string(timeout_.count()) + " ms");
      }
      backoff.pause();
    }
  }

  int device_;
  std::chrono::milliseconds timeout_;
  cudaStream_t stream_ = nullptr;
  Marker last_ = 0;
  std::deque<std::pair<Marker, cudaEvent_t>> pending_;  // recorded, not yet waited for
  std::vector<cudaEvent_t> idle_;                       // recorded and passed: reusable
};

}  // namespace

bool cuda_device_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // leave no error behind for the caller's next CUDA call
    return false;
  }
  return count > 0;
}

DeviceIdentity cuda_device_identity(int device) {
  DeviceIdentity id{.host = host_name()};
  try {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp properties{};
    check_cuda(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
    id.gpu = uuid_text(properties.uuid);
  } catch (const InternalError& e) {
    cudaGetLastError();
    id.error = "device " + std::to_string(device) + ": " + e.what();
  }
  return id;
}

std::unique_ptr<DeviceCopier> make_cuda_copier(int device, std::chrono::milliseconds timeout) {
  return std::make_unique<CudaCopier>(device, timeout);
}

}  // namespace cohort::ops
