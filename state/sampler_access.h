// The door from State (and from tests that simulate worlds in one process) to an ElasticSampler's
// core, which its public interface hides.
#pragma once

#include "cohort/elastic/sampler.h"
#include "state/sampler_core.h"

namespace cohort::elastic::detail {

struct SamplerAccess {
  static SamplerCore& core(ElasticSampler& s) { return *s.core_; }
  static const SamplerCore& core(const ElasticSampler& s) { return *s.core_; }
};

}  // namespace cohort::elastic::detail
