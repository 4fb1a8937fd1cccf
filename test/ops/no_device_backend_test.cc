// The device backend of a build without the CUDA toolkit (ops/no_device_backend.cc), compiled into
// this test whatever this build has: every device tensor is refused, with one message.
#include <catch2/catch.hpp>
#include <chrono>

#include "cohort/errors.h"
#include "ops/device_backend.h"
#include "ops/lone_backend.h"

using namespace cohort;
using namespace std::chrono_literals;

TEST_CASE("a build without CUDA refuses device tensors naming the collective") {
  CHECK_THROWS_AS(ops::require_device_backend("allreduce 'g': "), InvalidArgument);
  CHECK_THROWS_WITH(ops::require_device_backend("allreduce 'g': "),
                    "allreduce 'g': a CUDA device tensor, but this Cohort was built without CUDA");
  ops::LoneBackend lone;
  CHECK_THROWS_WITH(ops::make_device_backend(lone, 1, 1s),
                    "device 1: a CUDA device tensor, but this Cohort was built without CUDA");
}
