// Ranks as threads of one test process, for the in-process backend tests (gloo_backend_test,
// staged_backend_test): each rank's body runs on a thread of its own over a Gloo backend of its
// own, rendezvous through an in-process HashStore. Catch2's assertion macros are not
// thread-safe: rank threads throw (ensure()), and the main thread reports the first failure.
#pragma once

#include <gloo/rendezvous/hash_store.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ops/gloo_backend.h"

namespace cohort::ops::testing {

inline void ensure(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

// Runs `body(rank)` on `size` threads at once; fails the test with the first rank's error.
inline void on_threads(int size, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(size);
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        body(rank);
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int rank = 0; rank < size; ++rank) {
    if (!errors[rank]) continue;
    try {
      std::rethrow_exception(errors[rank]);
    } catch (const std::exception& e) {
      FAIL("rank " << rank << ": " << e.what());
    }
  }
  SUCCEED("all " << size << " ranks passed");
}

// Runs `body(backend)` on `size` ranks, each with its own Gloo backend.
inline void on_ranks(int size, const std::function<void(Backend&)>& body) {
  gloo::rendezvous::HashStore store;
  on_threads(size, [&](int rank) {
    auto backend = make_gloo_backend(
        {.rank = rank, .size = size, .prefix = "t", .timeout = std::chrono::seconds(20)}, store);
    body(*backend);
    // As in Runtime::shutdown: no rank may close its connections while a peer still sends the
    // tail of the last collective (that peer would see "Connection closed by peer").
    backend->barrier();
  });
}

}  // namespace cohort::ops::testing
