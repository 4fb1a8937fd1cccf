// What of the NCCL backend can be checked on any machine, GPU or not: the library answers, a
// machine without a usable device says so, and a backend that cannot be created fails on every
// rank with a message naming the ranks and the CUDA error, without crashing or hanging.
#include <cuda_runtime.h>
#include <gloo/rendezvous/hash_store.h>
#include <nccl.h>

#include <catch2/catch.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cohort/errors.h"
#include "ops/gloo_backend.h"
#include "ops/lone_backend.h"
#include "ops/nccl_backend.h"

using namespace cohort;
using namespace cohort::ops;

namespace {

bool driver_and_device() {
  int count = 0;
  bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  return ok;
}

// The message of the InternalError that make_nccl_backend throws, or "" if it throws nothing.
std::string creation_error(Backend& bootstrap, int device) {
  try {
    make_nccl_backend(bootstrap, device, std::chrono::seconds(10));
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("nccl version query works without a GPU") {
  REQUIRE(nccl_version() == NCCL_VERSION_CODE);
  REQUIRE(nccl_version() >= 21000);
}

TEST_CASE("nccl backend without a GPU fails cleanly") {
  if (driver_and_device()) {
    WARN("a CUDA device is present: ops.nccl_backend_check covers this machine");
    REQUIRE(cuda_device_available());
    return;
  }
  REQUIRE_FALSE(cuda_device_available());
  REQUIRE_FALSE(cuda_device_available());  // asking again finds no stale error either
  LoneBackend lone;
  std::string error = creation_error(lone, 0);
  INFO(error);
  REQUIRE(error.find("rank(s) 0 of 1 could not prepare their CUDA device") != std::string::npos);
  REQUIRE(error.find("device 0: cudaSetDevice: cuda") != std::string::npos);
}

TEST_CASE("nccl backend on a missing device fails on every rank without a hang") {
  // Rank 1 names a device that exists nowhere; rank 0 may or may not have a GPU. Both must
  // throw (rank 0 must not wait in ncclCommInitRank for rank 1), and both name rank 1.
  gloo::rendezvous::HashStore store;
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      auto gloo = make_gloo_backend(
          {.rank = rank, .size = 2, .prefix = "n", .timeout = std::chrono::seconds(20)}, store);
      errors[rank] = creation_error(*gloo, rank == 0 ? 0 : 1000);
      gloo->barrier();
    });
  }
  for (auto& t : threads) t.join();
  for (int rank = 0; rank < 2; ++rank) {
    INFO("rank " << rank << ": " << errors[rank]);
    REQUIRE(errors[rank].find("could not prepare their CUDA device") != std::string::npos);
    REQUIRE(errors[rank].find("1 of 2") != std::string::npos);
  }
  REQUIRE(errors[1].find("device 1000: cudaSetDevice") != std::string::npos);
}
