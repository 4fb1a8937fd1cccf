// Gloo allreduce algorithms for every Cohort element type, and the choice among them by size.
// Legacy algorithm objects (halving-doubling, ring-chunked) are built here and cached by the
// backend; the new-API ring runs per call. All reduce through Cohort's kernels (ops/reduce.h).
#pragma once

#include <gloo/algorithm.h>
#include <gloo/context.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "cohort/types.h"
#include "ops/gloo_wait_breaker.h"

namespace cohort::ops {

enum class GlooAllreduceAlgorithm { kHalvingDoubling, kRingChunked, kRing };

// The algorithm for one allreduce of `count` elements of `bytes` bytes in all. Depends only on
// values every rank shares, so every rank picks the same one.
GlooAllreduceAlgorithm choose_gloo_allreduce(size_t count, size_t bytes, int ranks);

// Builds a legacy algorithm bound to `buffer` (kHalvingDoubling or kRingChunked). Construction
// takes communication slots from `context`, so every rank must build the same objects in the same
// order. Throws InvalidArgument for kAverage or for more than 2^31-1 elements.
std::unique_ptr<gloo::Algorithm> make_gloo_allreduce(GlooAllreduceAlgorithm algorithm,
                                                     const std::shared_ptr<gloo::Context>& context,
                                                     void* buffer, size_t count, DataType dtype,
                                                     ReduceOp op);

// Runs the new-API ring allreduce in place; `tag` must differ from the previous operation's. Its
// buffer is watched through `in_flight` (gloo_wait_breaker.h).
void run_gloo_ring_allreduce(const std::shared_ptr<gloo::Context>& context, void* buffer,
                             size_t count, DataType dtype, ReduceOp op, uint32_t tag,
                             GlooWaitBreaker::InFlight& in_flight);

}  // namespace cohort::ops
