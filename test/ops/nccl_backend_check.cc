// The NCCL backend on real GPUs: every operation on device memory against results computed on the
// host (the checks of backend_checks.h that the MPI and Gloo backends pass, through a wrapper
// that stages host buffers in device memory), the DeviceBackend's scaled sums and allocate(), and
// abort() followed by a new communicator.
// Runs alone (a world of one), under mpirun or under cohortrun, one GPU per rank of a host. Exits
// 77 (reported by ctest as skipped) when there is no usable GPU or fewer GPUs than ranks on this
// host, 1 on any mismatch (printed), 0 otherwise.
#include <cuda_runtime.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "backend_checks.h"
#include "cohort/errors.h"
#include "core/backend_factory.h"
#include "core/config.h"
#include "ops/half.h"
#include "ops/nccl_backend.h"

using namespace cohort;
using namespace cohort::ops;

namespace {

void cuda(cudaError_t rc, const char* call) {
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

int report(bool ok, int rank, const std::string& what) {
  if (!ok) std::printf("rank %d: FAILED: %s\n", rank, what.c_str());
  return ok ? 0 : 1;
}

// The DeviceBackend's own operations, which the engine uses for averages, scale factors and
// runtime-owned results: sums with a factor (float32, float16), and allocate(). Returns the
// number of failed checks.
int check_device_backend(DeviceBackend& b) {
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

// abort() stops the backend: its next operation throws InternalError naming the reason, as does
// every later one; a backend made afterwards over the same CPU bootstrap (a new communicator)
// works. Returns the number of failed checks.
int check_abort_and_rebuild(Backend& cpu, int device, std::chrono::milliseconds timeout) {
  int r = cpu.rank(), n = cpu.size(), failures = 0;
  std::vector<float> one(8, 1.0f);
  DeviceCopy buffer(one.data(), one.size() * 4);
  auto first = make_nccl_backend(cpu, device, timeout);
  first->allreduce(buffer.get(), one.size(), DataType::kFloat32, ReduceOp::kSum, {"a", false});
  first->abort("the check aborts it");
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      first->allreduce(buffer.get(), one.size(), DataType::kFloat32, ReduceOp::kSum, {"a", false});
      failures += report(false, r, "an allreduce after abort() ran");
    } catch (const InternalError& e) {
      bool named = std::string(e.what()).find("the check aborts it") != std::string::npos;
      failures += report(named, r, std::string("abort's reason missing: ") + e.what());
    }
  }
  first.reset();
  auto second = make_nccl_backend(cpu, device, timeout);
  second->allreduce(buffer.get(), one.size(), DataType::kFloat32, ReduceOp::kSum, {"a", false});
  buffer.copy_to(one.data());
  // One sum before the abort and one after the rebuild: n * n.
  failures += report(one[7] == static_cast<float>(n * n), r, "allreduce after a rebuild");
  return failures;
}

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::atoi(value) : fallback;
}

}  // namespace

int main() {
  constexpr int kSkip = 77;
  int devices = 0;
  if (!cuda_device_available() || cudaGetDeviceCount(&devices) != cudaSuccess) {
    std::printf("no usable CUDA device: skipped\n");
    return kSkip;
  }
  try {
    std::signal(SIGPIPE, SIG_IGN);  // as the runtime does before Gloo connects
    Config config = Config::from_environment();
    const Placement& placed = config.placement;
    int local_rank =
        config.hosts_placed ? placed.local_rank : env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0);
    int local_size =
        config.hosts_placed ? placed.local_size : env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1);
    if (local_size > devices) {
      std::printf("%d ranks on this host but %d CUDA devices: skipped\n", local_size, devices);
      return kSkip;
    }
    auto cpu = make_backend(config);
    int failures = check_abort_and_rebuild(*cpu, local_rank, config.timeout);
    {
      std::unique_ptr<DeviceBackend> device = make_nccl_backend(*cpu, local_rank, config.timeout);
      failures += check_device_backend(*device);
      HostStaged b(std::move(device));
      testing::BackendChecks checks(b);
      checks.run_all();
      failures += checks.failures();
    }
    cpu->barrier();  // no rank closes its connections while a peer still uses them
    std::printf("rank %d of %d: %s\n", cpu->rank(), cpu->size(),
                failures == 0 ? "every check passed" : "FAILED");
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    return 1;
  }
}
