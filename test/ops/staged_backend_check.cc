// The staged device backend over the host backend the runtime builds from cohortrun's environment
// (shared memory on one host, or Gloo), in separate processes, with the host copier standing for
// the GPU (host_copier.h, lazy): every check of backend_checks.h, splits included, the scaled sums,
// and no copy left in flight. COHORT_STAGED_CHUNK_BYTES sets the chunk as for the runtime.
//
// Usage: staged_backend_check EXPECTED_HOST_BACKEND (shm or gloo).
#include <cstdio>
#include <string>
#include <vector>

#include "backend_checks.h"
#include "core/config.h"
#include "host_copier.h"
#include "job_backend.h"
#include "ops/staged_backend.h"

using namespace cohort;
using namespace cohort::ops;

namespace {

int check_scaled(DeviceBackend& b) {
  int n = b.size(), failures = 0;
  float sum = static_cast<float>(n * (n + 1) / 2);
  std::vector<float> values(10007, static_cast<float>(b.rank() + 1));
  b.allreduce_scaled(values.data(), values.size(), DataType::kFloat32, 0.5);
  for (float v : {values.front(), values.back()}) failures += v == 0.5f * sum ? 0 : 1;
  std::vector<size_t> counts(static_cast<size_t>(n), 3);
  std::vector<float> input(counts.size() * 3, static_cast<float>(b.rank() + 1)), block(3);
  b.reduce_scatter_scaled(input.data(), block.data(), counts, DataType::kFloat32, 2.0);
  failures += block[2] == 2.0f * sum ? 0 : 1;
  if (failures) std::fprintf(stderr, "rank %d: scaled sums wrong\n", b.rank());
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string expected = argc > 1 ? argv[1] : "shm";
    Config config = Config::from_environment();
    auto host = testing::job_backend(config, expected);
    int failures = 0;
    {
      auto* copier = new testing::HostCopier(/*lazy=*/true);
      auto staged = make_staged_backend(*host, std::unique_ptr<DeviceCopier>(copier),
                                        config.staged_chunk_bytes);
      testing::BackendChecks checks(*staged);
      checks.run_all();
      failures += checks.failures() + check_scaled(*staged);
      if (copier->in_flight() != 0) ++failures;
    }
    host->barrier();
    std::printf("rank %d of %d (staged over %s): %s\n", host->rank(), host->size(),
                expected.c_str(), failures ? "FAILED" : "passed");
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    return 1;
  }
}
