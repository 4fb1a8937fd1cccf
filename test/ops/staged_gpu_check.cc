// The staged device backend on a real GPU (label `gpu`): the CUDA copier really copying. Every
// operation on device memory against the host results (backend_checks.h through HostStaged), the
// scaled sums and allocate() (device_checks.h), the order after work queued on the legacy default
// stream, and the factory's choice (ops/device_backend.h): ranks sharing a GPU get the staged
// backend. Runs alone or under cohortrun; the ranks of a host share its GPUs (local rank modulo
// their number). COHORT_STAGED_CHUNK_BYTES sets the chunk. Exits 77 (skipped) without a usable
// GPU, 1 on any mismatch (printed), 0 otherwise.
#include <cuda_runtime.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "backend_checks.h"
#include "core/backend_factory.h"
#include "core/config.h"
#include "device_checks.h"
#include "ops/cuda_copier.h"
#include "ops/staged_backend.h"

using namespace cohort;
using namespace cohort::ops;
using namespace cohort::ops::testing;

namespace {

// 64 MiB of ones, overwritten with zeros by a memset queued on the legacy default stream and not
// waited for: the allreduce must see the zeros in every chunk.
int check_default_stream_order(DeviceBackend& b) {
  size_t count = size_t{16} << 20;
  std::vector<float> host(count, 1.0f);
  DeviceCopy data(host.data(), count * sizeof(float));
  cuda(cudaMemsetAsync(data.get(), 0, count * sizeof(float), nullptr), "cudaMemsetAsync");
  b.allreduce(data.get(), count, DataType::kFloat32, ReduceOp::kSum, {"order", true});
  data.copy_to(host.data());
  size_t wrong = 0;
  for (float v : host) wrong += v != 0.0f;
  return report(wrong == 0, b.rank(),
                "legacy default stream order: " + std::to_string(wrong) + " elements wrong");
}

// What the factory picks for this set, against what it should: the staged backend where ranks of
// a host share a GPU or this build has no NCCL.
int check_choice(Backend& host, int device, const Config& config, bool shared) {
  auto chosen = make_device_backend(host, device, config.timeout, config.device_options());
  std::string name(chosen->name());
  bool staged_expected =
      shared || COHORT_TEST_NCCL == 0 || config.device_operations == DeviceOperations::kStaged;
  if (host.rank() == 0) std::printf("factory chose %s\n", name.c_str());
  int failures = report(!staged_expected || name == "staged", host.rank(), "factory chose " + name);
  failures += check_device_backend(*chosen);
  return failures;
}

}  // namespace

int main() {
  constexpr int kSkip = 77;
  int devices = 0;
  if (!cuda_device_available() || cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) {
    std::printf("no usable CUDA device: skipped\n");
    return kSkip;
  }
  try {
    std::signal(SIGPIPE, SIG_IGN);  // as the runtime does before Gloo connects
    Config config = Config::from_environment();
    auto host = make_backend(config);
    if (config.hosts_placed) use_shared_memory(host, config, config.placement);
    int local_rank = config.hosts_placed ? config.placement.local_rank : 0;
    int local_size = config.hosts_placed ? config.placement.local_size : 1;
    int device = local_rank % devices;
    int failures = 0;
    {
      auto staged = make_staged_backend(*host, make_cuda_copier(device, config.timeout),
                                        config.staged_chunk_bytes);
      failures += check_device_backend(*staged);
      failures += check_default_stream_order(*staged);
      HostStaged b(std::move(staged));
      BackendChecks checks(b);
      checks.run_all();
      failures += checks.failures();
    }
    failures += check_choice(*host, device, config, local_size > devices);
    host->barrier();  // no rank closes its connections while a peer still uses them
    std::printf("rank %d of %d (staged, device %d, chunk %zu): %s\n", host->rank(), host->size(),
                device, config.staged_chunk_bytes, failures == 0 ? "every check passed" : "FAILED");
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    return 1;
  }
}
