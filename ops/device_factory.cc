// The device backend of a build with the CUDA toolkit: NCCL or the staged backend, chosen per
// process set from the GPUs its ranks use (ops/device_choice.h).
#include <string>

#include "base/log.h"
#include "ops/cuda_copier.h"
#include "ops/device_backend.h"
#include "ops/device_choice.h"
#include "ops/nccl_device.h"
#include "ops/staged_backend.h"

namespace cohort::ops {

void require_device_backend(const std::string&) {}

std::unique_ptr<DeviceBackend> make_device_backend(Backend& bootstrap, int cuda_device,
                                                   std::chrono::milliseconds timeout,
                                                   const DeviceOptions& options) {
  // A rank whose device is unusable still takes part, so that all throw together.
  auto identities = exchange_identities(bootstrap, cuda_device_identity(cuda_device));
  DeviceChoice choice =
      choose_device_backend(options.operations, nccl_built(), identities, bootstrap.rank());
  if (bootstrap.rank() == 0) {
    log::info("device collectives of a process set of ", bootstrap.size(), " rank(s) on ",
              choice.nccl ? "NCCL" : "the staged backend", ": ", choice.reason);
  }
  if (choice.nccl) return make_nccl_device(bootstrap, cuda_device, timeout);
  return make_staged_backend(bootstrap, make_cuda_copier(cuda_device, timeout),
                             options.staged_chunk_bytes);
}

}  // namespace cohort::ops
