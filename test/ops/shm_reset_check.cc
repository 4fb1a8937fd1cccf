// 100 elastic resets of a world on one host (cohortrun -H localhost:N --min-np N): every round
// sets up new shared-memory segments (the data plane's and the control plane's), and nothing of
// the earlier ones stays. In every round each worker maps exactly one of each and holds no
// descriptor to one, and its open descriptors do not
// grow with the rounds (a few come and go with the launcher's connections; one leaked per round
// would be a hundred); an allreduce checks the round's segment works. The ranks agree on every
// round's verdict, so that a failure ends the run on all of them rather than leaving some waiting.
//   shm_reset_check RESETS
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cohort/cohort.h"
#include "cohort/elastic/run.h"
#include "cohort/elastic/state.h"
#include "shm_mappings.h"

using cohort::ops::testing::mapped_segments;

namespace {

constexpr int kDescriptorSlack = 8;

// Open descriptors, and how many of them are a segment.
std::pair<int, int> descriptors() {
  int all = 0, segments = 0;
  DIR* dir = opendir("/proc/self/fd");
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    ++all;
    char target[256] = {};
    std::string path = std::string("/proc/self/fd/") + entry->d_name;
    if (readlink(path.c_str(), target, sizeof(target) - 1) > 0 &&
        std::string(target).find("memfd:cohort-") != std::string::npos) {
      ++segments;
    }
  }
  closedir(dir);
  return {all, segments};
}

}  // namespace

int main(int argc, char** argv) {
  int target = argc > 1 ? std::atoi(argv[1]) : 100;
  cohort::init();
  cohort::elastic::State state;
  int first_round_descriptors = -1;
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    if (ok) return;
    std::fprintf(stderr, "rank %d, reset %d: %s\n", cohort::rank(), cohort::elastic::resets(),
                 what.c_str());
    ++failures;
  };
  cohort::elastic::run(state, [&](cohort::elastic::State&) {
    int resets = cohort::elastic::resets();
    double one = 1;
    cohort::allreduce("reset_check.sum", cohort::Tensor::of(std::span<double>(&one, 1)));
    check(one == cohort::size(), "the allreduce gave " + std::to_string(one));
    check(mapped_segments() == 1, std::to_string(mapped_segments()) + " data segments mapped");
    check(mapped_segments("cohort-control") == 1,
          std::to_string(mapped_segments("cohort-control")) + " control segments mapped");
    auto [all, segments] = descriptors();
    check(segments == 0, std::to_string(segments) + " descriptors to a segment");
    if (first_round_descriptors < 0) first_round_descriptors = all;
    check(all <= first_round_descriptors + kDescriptorSlack,
          std::to_string(all) + " descriptors open, " + std::to_string(first_round_descriptors) +
              " in the first round");
    double failed_anywhere = failures;
    cohort::allreduce("reset_check.failures",
                      cohort::Tensor::of(std::span<double>(&failed_anywhere, 1)));
    failures = static_cast<int>(failed_anywhere);
    if (failures == 0 && resets < target) {
      throw cohort::InternalError("reset " + std::to_string(resets + 1) + " requested by the test");
    }
  });
  if (cohort::rank() == 0) {
    std::printf("shm_reset_check: %d resets, %s\n", cohort::elastic::resets(),
                failures ? "FAILED" : "passed");
  }
  cohort::shutdown();
  return failures == 0 ? 0 : 1;
}
