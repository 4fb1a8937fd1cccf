// What the elastic test trainer trains, shared with the test launcher that checks its output.
#pragma once

#include <cstdint>

namespace cohort::elastic_test {

inline constexpr uint64_t kSamples = 480;
inline constexpr int kEpochs = 2;
inline constexpr uint64_t kBatch = 4;   // per rank and step
inline constexpr int kCommitEvery = 3;  // steps
inline constexpr int kWidth = 4096;     // floats in the model

// Each sample's gradient: small whole numbers, so every sum of them is exact in float and the
// final model depends only on which samples were trained, not on how they were split up.
inline float gradient(uint64_t sample, int i) {
  return static_cast<float>((sample * 7 + static_cast<uint64_t>(i)) % 5);
}

// The model after every sample of every epoch was trained exactly once.
inline double expected_weight(int i) {
  double sum = 0;
  for (uint64_t s = 0; s < kSamples; ++s) sum += gradient(s, i);
  return sum * kEpochs;
}

}  // namespace cohort::elastic_test
