// Tensor fusion planning: turns ready allreduce responses into fewer, larger ones. Responses whose
// tensors share everything that affects the reduction (dtype, reduce op, scale factors, process
// set) are packed together up to a byte threshold, looking ahead past responses that do not fit.
#pragma once

#include <cstddef>
#include <vector>

#include "core/request.h"

namespace cohort {

struct ReadyResponse {
  Response response;
  Request description;  // how rank 0 described the tensor (equal on every rank once validated)
};

// Returns the responses in execution order: each fused group takes the place of its first member;
// everything else keeps its relative order. threshold == 0 disables fusion.
std::vector<Response> fuse_responses(std::vector<ReadyResponse> ready, size_t threshold);

}  // namespace cohort
