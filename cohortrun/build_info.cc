#include "cohortrun/build_info.h"

#include <utility>
#include <vector>

// Set for this file by cohortrun/CMakeLists.txt.
#if !defined(COHORT_VERSION) || !defined(COHORT_BUILT_NCCL) || !defined(COHORT_BUILT_CUDA) || \
    !defined(COHORT_BUILT_TORCH) || !defined(COHORT_BUILT_PYTHON)
#error "build_info.cc needs COHORT_VERSION and COHORT_BUILT_{NCCL,CUDA,TORCH,PYTHON}"
#endif

namespace cohort::discovery {
namespace {

using Section = std::pair<const char*, std::vector<std::pair<const char*, bool>>>;

std::vector<Section> sections() {
  return {
      {"Available frameworks",
       {{"libtorch C++ adapter (Cohort::torch)", COHORT_BUILT_TORCH != 0},
        {"Python package (import cohort.torch)", COHORT_BUILT_PYTHON != 0}}},
      {"Available launchers",
       {{"cohortrun (Gloo; static, elastic and etcd agents)", true}, {"mpirun (Open MPI)", true}}},
      {"Available tensor operations",
       {{"Gloo (CPU)", true},
        {"MPI (CPU)", true},
        {"shared memory (CPU, ranks of one host)", true},
        {"NCCL (CUDA)", COHORT_BUILT_NCCL != 0},
        {"staged copies (CUDA, over the CPU operations)", COHORT_BUILT_CUDA != 0}}},
  };
}

}  // namespace

std::string version_text() {
  return std::string("cohortrun (Cohort) ") + COHORT_VERSION;
}

std::string build_report() {
  std::string out = std::string("Cohort v") + COHORT_VERSION + ":\n";
  for (const auto& [heading, items] : sections()) {
    out += std::string("\n") + heading + ":\n";
    for (const auto& [name, built] : items) {
      out += std::string("    [") + (built ? "X" : " ") + "] " + name + "\n";
    }
  }
  return out;
}

}  // namespace cohort::discovery
