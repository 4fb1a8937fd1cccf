#include "ops/cuda_call.h"

#include <string>

#include "cohort/errors.h"

namespace cohort::ops {

void check_cuda(cudaError_t rc, const char* call) {
  if (rc == cudaSuccess) return;
  throw InternalError(std::string(call) + ": " + cudaGetErrorName(rc) + ": " +
                      cudaGetErrorString(rc));
}

}  // namespace cohort::ops
