// The Gloo data plane: TCP connections to every rank, built through a rendezvous store.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "ops/backend.h"

namespace gloo::rendezvous {
class Store;
}

namespace cohort::ops {

struct GlooBackendOptions {
  int rank = 0;
  int size = 1;
  std::string hostname = "127.0.0.1";  // the address this rank's device listens on
  std::string prefix;                  // keeps rounds of rendezvous apart in the store
  std::chrono::milliseconds timeout{30'000};
};

// Connects to every other rank through `store` (used only during this call).
std::unique_ptr<Backend> make_gloo_backend(const GlooBackendOptions& options,
                                           gloo::rendezvous::Store& store);

}  // namespace cohort::ops
