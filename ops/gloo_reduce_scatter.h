// Reduce-scatter over Gloo's point-to-point transfers (Debian's Gloo 0.5 has no new-API
// reduce-scatter, and its legacy ReduceScatterHalvingDoubling leaves each block at the start of
// the buffer and takes an int count): a ring that reduces through Cohort's kernels, for any
// counts (zero ones included), any number of ranks and every element type.
#pragma once

#include <gloo/context.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cohort/types.h"
#include "ops/gloo_wait_breaker.h"

namespace cohort::ops {

// Whether a reduce-scatter of `total_bytes` (the whole input) over `ranks` runs the ring below, or
// allreduces the whole input and keeps one block. Depends only on values every rank shares.
bool gloo_reduce_scatter_uses_ring(size_t total_bytes, int ranks);

// Rank r ends with block r (counts[r] elements, after the earlier ranks' blocks) of the
// elementwise reduction of every rank's `input` (sum(counts) elements) in `output`. P - 1 steps
// around the ring, one block per step: rank r sends every block but its own (sum(counts) -
// counts[r] elements) and receives every block but its left neighbour's. `scratch` holds the blocks
// in flight (two of the largest block); the caller keeps it to avoid allocating per call. `tag`
// must differ from the previous operation's on this context; its buffers are registered with
// `in_flight`. `op` is kSum, kMin, kMax or kProduct;
// `output` must not overlap `input`.
void run_gloo_ring_reduce_scatter(const std::shared_ptr<gloo::Context>& context, const void* input,
                                  void* output, std::span<const size_t> counts, DataType dtype,
                                  ReduceOp op, uint32_t tag, std::vector<std::byte>& scratch,
                                  GlooWaitBreaker::InFlight& in_flight);

}  // namespace cohort::ops
