// The choice of device backend (ops/device_choice.h): NCCL only where this build has it and no
// two ranks share a GPU, what COHORT_DEVICE_OPERATIONS forces and when forcing NCCL is refused,
// and the exchange of identities over a real host backend.
#include <gloo/rendezvous/hash_store.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cohort/errors.h"
#include "ops/device_choice.h"
#include "ops/gloo_backend.h"

using namespace cohort;
using namespace cohort::ops;

namespace {

const std::vector<DeviceIdentity> kOwnGpus = {
    {"a", "GPU-1", ""}, {"a", "GPU-2", ""}, {"b", "GPU-1", ""}};  // same UUID, other host
const std::vector<DeviceIdentity> kShared = {
    {"a", "GPU-1", ""}, {"a", "GPU-2", ""}, {"a", "GPU-1", ""}};

}  // namespace

TEST_CASE("auto: NCCL where built and every rank has its own GPU, staged otherwise") {
  CHECK(choose_device_backend(DeviceOperations::kAuto, true, kOwnGpus, 0).nccl);
  DeviceChoice shared = choose_device_backend(DeviceOperations::kAuto, true, kShared, 1);
  CHECK_FALSE(shared.nccl);
  CHECK(shared.reason == "ranks 0 and 2 share GPU GPU-1 on a, and NCCL needs a GPU per rank");
  DeviceChoice unbuilt = choose_device_backend(DeviceOperations::kAuto, false, kOwnGpus, 0);
  CHECK_FALSE(unbuilt.nccl);
  CHECK(unbuilt.reason == "this Cohort was built without NCCL");
}

TEST_CASE("COHORT_DEVICE_OPERATIONS forces a backend, nccl is refused where it cannot work") {
  CHECK_FALSE(choose_device_backend(DeviceOperations::kStaged, true, kOwnGpus, 0).nccl);
  CHECK(choose_device_backend(DeviceOperations::kNccl, true, kOwnGpus, 2).nccl);
  CHECK_THROWS_AS(choose_device_backend(DeviceOperations::kNccl, false, kOwnGpus, 0),
                  InvalidArgument);
  CHECK_THROWS_WITH(choose_device_backend(DeviceOperations::kNccl, true, kShared, 0),
                    Catch::Contains("ranks 0 and 2 share GPU GPU-1 on a"));
  CHECK(to_string(DeviceOperations::kStaged) == "staged");
}

TEST_CASE("an unusable device on any rank fails every rank alike, naming the ranks") {
  std::vector<DeviceIdentity> ids = kOwnGpus;
  ids[1] = {"a", "", "device 1: cudaSetDevice: invalid device ordinal"};
  for (auto requested : {DeviceOperations::kAuto, DeviceOperations::kStaged}) {
    CHECK_THROWS_WITH(choose_device_backend(requested, true, ids, 0),
                      "device backend: rank(s) 1 of 3 could not use their CUDA device; no device "
                      "backend was made");
    CHECK_THROWS_WITH(choose_device_backend(requested, true, ids, 1),
                      Catch::Contains("Rank 1: device 1: cudaSetDevice: invalid device ordinal"));
  }
}

TEST_CASE("identities travel over the host backend, long names truncated") {
  gloo::rendezvous::HashStore store;
  std::vector<std::vector<DeviceIdentity>> seen(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      auto b = make_gloo_backend(
          {.rank = rank, .size = 2, .prefix = "id", .timeout = std::chrono::seconds(20)}, store);
      DeviceIdentity mine{rank == 0 ? std::string(300, 'h') : "host1",
                          "GPU-" + std::to_string(rank), rank == 1 ? "no driver" : ""};
      seen[rank] = exchange_identities(*b, mine);
      b->barrier();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& ids : seen) {
    REQUIRE(ids.size() == 2);
    CHECK(ids[0].host == std::string(255, 'h'));
    CHECK(ids[0].gpu == "GPU-0");
    CHECK(ids[0].error.empty());
    CHECK(ids[1].host == "host1");
    CHECK(ids[1].error == "no driver");
  }
}
