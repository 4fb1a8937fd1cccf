// The choice of device backend for one process set (ops/device_backend.h make_device_backend):
// the ranks trade the identity of the GPU each will use, and every rank decides alike from the
// same table. Free of CUDA so that the rule is tested on machines without a GPU.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "ops/device_backend.h"

namespace cohort::ops {

// What one rank tells the others about its device.
struct DeviceIdentity {
  std::string host;   // the host's name
  std::string gpu;    // the GPU's UUID, the same for every process that uses that GPU
  std::string error;  // why this rank cannot use its device; empty when it can
};

// Collective over `bootstrap`: every rank's identity, in rank order. Each field travels truncated
// to 255 bytes.
std::vector<DeviceIdentity> exchange_identities(Backend& bootstrap, const DeviceIdentity& mine);

struct DeviceChoice {
  bool nccl = false;   // NCCL, or the staged backend
  std::string reason;  // why, for the log
};

// The decision from `identities` (rank order), the same on every rank. NCCL where `requested` is
// kNccl, or kAuto and this build has NCCL and no two ranks share a GPU (same host and UUID); the
// staged backend otherwise. Throws InternalError naming the ranks whose device is unusable (and
// `rank`'s own reason), and InvalidArgument where kNccl cannot be had, saying why.
DeviceChoice choose_device_backend(DeviceOperations requested, bool nccl_built,
                                   std::span<const DeviceIdentity> identities, int rank);

}  // namespace cohort::ops
