// The hierarchical backend with ranks as threads of one process: Gloo over real loopback TCP
// (rendezvous through an in-process HashStore), real shared-memory segments per "host". The hosts'
// ranks interleave here, which cohortrun's placement never does, so that blocks gathered host by
// host must be put back in rank order.
#include <gloo/rendezvous/hash_store.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "backend_checks.h"
#include "ops/gloo_backend.h"
#include "ops/hierarchical_backend.h"

using namespace cohort;
using namespace cohort::ops;

namespace {

// Every check of backend_checks.h on `hosts.size()` ranks, rank r on host hosts[r]; returns the
// mismatches, or throws the first rank's error.
int check_hierarchical(const std::vector<std::string>& hosts) {
  int size = static_cast<int>(hosts.size());
  gloo::rendezvous::HashStore store;
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(size);
  std::vector<int> failures(size, 0);
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        std::unique_ptr<Backend> world = make_gloo_backend(
            {.rank = rank, .size = size, .prefix = "h", .timeout = std::chrono::seconds(20)},
            store);
        auto backend = make_hierarchical_backend(
            world, {.hosts = hosts, .shm = {.timeout = std::chrono::seconds(20)}});
        testing::BackendChecks checks(*backend);
        checks.run_all();
        failures[rank] = checks.failures();
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  int total = 0;
  for (int f : failures) total += f;
  return total;
}

}  // namespace

TEST_CASE("hierarchical: every collective with two hosts whose ranks interleave") {
  CHECK(check_hierarchical({"a", "b", "a", "b"}) == 0);
}

TEST_CASE("hierarchical: every collective with a lone rank between two ranks of one host") {
  CHECK(check_hierarchical({"a", "b", "a"}) == 0);
}
