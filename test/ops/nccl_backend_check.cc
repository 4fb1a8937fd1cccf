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
#include "device_checks.h"
#include "ops/nccl_backend.h"

using namespace cohort;
using namespace cohort::ops;
using namespace cohort::ops::testing;

namespace {

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
