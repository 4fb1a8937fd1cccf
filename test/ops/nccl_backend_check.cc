// The NCCL backend on real GPUs: every operation on device memory against results computed on the
// host (the same checks as the Gloo and MPI backends, through a wrapper that stages host buffers
// in device memory). Runs alone (a world of one), under mpirun or under cohortrun, one GPU per
// rank of a host. Exits 77 (reported by ctest as skipped) when there is no usable GPU or fewer
// GPUs than ranks on this host, 1 on any mismatch (printed), 0 otherwise.
#include <cuda_runtime.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "cohort/errors.h"
#include "collective_matrix.h"
#include "core/backend_factory.h"
#include "core/config.h"
#include "ops/nccl_backend.h"

using namespace cohort;
using namespace cohort::ops;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what, int rank) {
  if (ok) return;
  std::fprintf(stderr, "rank %d: %s\n", rank, what.c_str());
  ++failures;
}

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

void check_collectives(Backend& b) {
  std::string error = testing::check_allreduce_matrix(b, {0, 1, 7, 33, 1000}, size_t{1} << 20);
  expect(error.empty(), error, b.rank());
  for (int root = 0; root < b.size(); ++root) {
    std::vector<int64_t> data(100000, b.rank() == root ? root + 10 : -1);
    b.broadcast(data.data(), data.size() * sizeof(int64_t), root);
    expect(data.front() == root + 10 && data.back() == root + 10, "broadcast", b.rank());
  }
  for (bool even : {false, true}) {  // grouped broadcasts, then ncclAllGather
    std::vector<size_t> counts(b.size());
    for (int r = 0; r < b.size(); ++r) counts[r] = even ? 5 : (r == 0 ? 0 : r + 2);
    std::vector<char> mine(counts[b.rank()], static_cast<char>(b.rank()));
    std::vector<char> all(std::accumulate(counts.begin(), counts.end(), size_t{0}), -1);
    b.allgatherv(mine.data(), all.data(), counts);
    for (size_t at = 0, r = 0; r < counts.size(); ++r) {
      for (size_t i = 0; i < counts[r]; ++i, ++at) {
        expect(all[at] == static_cast<char>(r), "allgatherv byte " + std::to_string(at), b.rank());
      }
    }
  }
  for (size_t scale : {size_t{1}, size_t{50001}}) {
    error = testing::check_alltoallv_matrix(b, scale);
    expect(error.empty(), error, b.rank());
  }
  error = testing::check_alltoallv_matrix(b, 7, b.size() - 1);
  expect(error.empty(), "with an idle rank: " + error, b.rank());
  const size_t pattern[] = {3, 0, 5, 1};
  for (size_t scale : {size_t{1}, size_t{20011}}) {
    std::vector<size_t> uneven, even(b.size(), scale + 2);
    for (int r = 0; r < b.size(); ++r) uneven.push_back(pattern[r % 4] * scale + (r == 0));
    for (const auto& counts : {uneven, even}) {
      error = testing::check_reduce_scatter_matrix(b, counts);
      expect(error.empty(), error, b.rank());
    }
  }
  b.barrier();
}

// A split of the last ranks (or of the one rank) and the parent working after it.
void check_split(Backend& b) {
  std::vector<int> tail;
  for (int r = std::max(0, b.size() - 2); r < b.size(); ++r) tail.push_back(r);
  if (b.rank() >= tail.front()) {
    auto sub = b.split(tail, "tail");
    std::string error = testing::check_allreduce_matrix(*sub, {1, 33});
    expect(error.empty(), "split: " + error, b.rank());
    error = testing::check_reduce_scatter_matrix(*sub, std::vector<size_t>(sub->size(), 3));
    expect(error.empty(), "split: " + error, b.rank());
    sub->barrier();
  }
  std::string error = testing::check_allreduce_matrix(b, {7});
  expect(error.empty(), "parent after a split: " + error, b.rank());
}

void check_errors(Backend& b) {
  float x = 1;
  try {
    b.allreduce(&x, 1, DataType::kFloat32, ReduceOp::kAverage, {"x", true});
    expect(false, "allreduce with average did not throw", b.rank());
  } catch (const InvalidArgument&) {
  }
  std::vector<size_t> wrong(b.size() + 1, 1);
  std::vector<float> in(wrong.size()), out(wrong.size());
  try {
    b.reduce_scatter(in.data(), out.data(), wrong, DataType::kFloat32, ReduceOp::kSum);
    expect(false, "reduce_scatter with a count too many did not throw", b.rank());
  } catch (const InvalidArgument&) {
  }
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
    int local_rank =
        config.local_rank >= 0 ? config.local_rank : env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0);
    int local_size =
        config.local_size >= 0 ? config.local_size : env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1);
    if (local_size > devices) {
      std::printf("%d ranks on this host but %d CUDA devices: skipped\n", local_size, devices);
      return kSkip;
    }
    auto cpu = make_backend(config);
    {
      HostStaged b(make_nccl_backend(*cpu, local_rank, config.timeout));
      check_collectives(b);
      check_split(b);
      check_errors(b);
      b.barrier();
    }
    cpu->barrier();  // no rank closes its connections while a peer still uses them
    std::printf("rank %d of %d: %s\n", cpu->rank(), cpu->size(),
                failures == 0 ? "every check passed" : "FAILED");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
