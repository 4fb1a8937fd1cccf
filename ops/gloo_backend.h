// The Gloo data plane: TCP connections to every rank, built through a rendezvous store.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/cancellation.h"
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
  // Abandons the connect when it fires (gloo_connect.h); the store passed beside these options
  // must be cancelled by it too.
  const Cancellation* cancel = nullptr;
  // Called once this rank's pair addresses are in the store (fault injection in tests).
  std::function<void()> on_published;
};

// Connects to every other rank through `store` (used only during this call).
std::unique_ptr<Backend> make_gloo_backend(const GlooBackendOptions& options,
                                           gloo::rendezvous::Store& store);
// Connects every rank of `bootstrap` (which already connects them: MPI under mpirun), trading the
// addresses through it, with no store; options' rank, size, prefix, cancel and on_published are
// not used (the ranks are bootstrap's).
std::unique_ptr<Backend> make_gloo_backend(const GlooBackendOptions& options, Backend& bootstrap);

}  // namespace cohort::ops
