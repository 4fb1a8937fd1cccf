// Tensor fusion planning: turns ready allreduce responses into fewer, larger ones. Responses whose
// tensors share everything that affects the reduction (dtype, reduce op, scale factors, process
// set) are packed together up to a byte threshold, looking ahead past responses that do not fit.
// A grouped allreduce is one response of several tensors; it fuses with others as a whole, and
// its tensors are cut into batches of one type up to the threshold (Response::batches).
#pragma once

#include <cstddef>
#include <vector>

#include "core/request.h"

namespace cohort {

struct ReadyResponse {
  Response response;
  Request description;  // how rank 0 described the tensor (equal on every rank once validated)
  // Where set, the description instead, kept alive by the caller for the call (rank 0's cached
  // path, which copies nothing).
  const Request* described = nullptr;

  const Request& how() const { return described ? *described : description; }
};

// Returns the responses in execution order: each fused response takes the place of its first
// member; everything else keeps its relative order. Every allreduce gets its element counts,
// parts and batches. threshold == 0 disables fusion: every tensor is reduced on its own.
std::vector<Response> fuse_responses(std::vector<ReadyResponse> ready, size_t threshold);

}  // namespace cohort
