// A State whose every value is a function of a "generation" number, so that a test can tell which
// checkpoint was loaded: a float buffer, an int buffer, a string object and an elastic sampler
// (at epoch g with 7g samples processed).
#pragma once

#include <cereal/types/string.hpp>
#include <string>
#include <vector>

#include "cohort/elastic/state.h"

namespace test {

constexpr uint64_t kSamples = 1000;

struct Values {
  cohort::elastic::State state;
  std::vector<float> weights;
  std::vector<int32_t> steps = std::vector<int32_t>(3);
  std::string tag;
  cohort::elastic::ElasticSampler sampler{kSamples, 11};

  Values(int generation, size_t floats) : weights(floats) {
    set(generation);
    state.track("weights", weights);
    state.track("steps", steps);
    state.track("tag", tag);
    state.track("sampler", sampler);
  }

  void set(int g) {
    for (size_t i = 0; i < weights.size(); ++i)
      weights[i] = static_cast<float>(g) + 0.5f * static_cast<float>(i % 1000);
    steps = {g, 2 * g, 3 * g};
    tag = "gen-" + std::to_string(g);
    if (sampler.epoch() != static_cast<uint64_t>(g)) sampler.set_epoch(static_cast<uint64_t>(g));
    if (g > 0 && sampler.unprocessed() - sampler.uncommitted() == kSamples) {
      sampler.record(*sampler.batches(7 * static_cast<uint64_t>(g)).begin());
    }
  }

  void commit_generation(int g) {
    set(g);
    state.commit();
  }

  bool generation_matches(int g) const {
    for (size_t i = 0; i < weights.size(); ++i) {
      if (weights[i] != static_cast<float>(g) + 0.5f * static_cast<float>(i % 1000)) return false;
    }
    return steps == std::vector<int32_t>{g, 2 * g, 3 * g} && tag == "gen-" + std::to_string(g) &&
           sampler.epoch() == static_cast<uint64_t>(g) &&
           sampler.unprocessed() - sampler.uncommitted() == kSamples - 7 * static_cast<uint64_t>(g);
  }
};

}  // namespace test
