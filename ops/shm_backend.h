// The data plane among ranks that share one host: every collective through a shared-memory
// segment (ops/shm_group.h, ops/shm_collectives.h) instead of TCP on loopback. It wraps the
// world's Gloo backend, which it uses once to tell the ranks where to meet and keeps for process
// sets (split) and for abort.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "base/cancellation.h"
#include "ops/backend.h"

namespace cohort::ops {

struct ShmBackendOptions {
  // Bounds the segment's set-up and every wait on a peer inside a collective.
  std::chrono::milliseconds timeout{30'000};
  // Abandons the set-up when it fires.
  const Cancellation* cancel = nullptr;
  // How much of each member's data one step moves (a multiple of 4096, at least 16 bytes per
  // rank); the segment holds 2 * (size + 1) of them.
  size_t slot_bytes = size_t{1} << 20;
};

// `world`'s ranks must all be on this host (its ranks are the local ranks). Collective: every
// rank of `world` calls it. Takes `world` once the segment is set up; throws InternalError if it
// cannot be, leaving `world` with the caller (whose cancellation hooks may still reach it).
std::unique_ptr<Backend> make_shm_backend(std::unique_ptr<Backend>& world,
                                          const ShmBackendOptions& options);

class ShmGroup;
struct ShmRendezvous;

// The group of `members` (world ranks, sorted, at least two) on one segment, where this rank is
// members[local]: local rank 0 creates the segment at `meet`, the others open it. Throws
// InternalError if the segment cannot be set up.
std::unique_ptr<ShmGroup> join_shm_group(const ShmRendezvous& meet, std::vector<int> members,
                                         int local, const ShmBackendOptions& options);

}  // namespace cohort::ops
