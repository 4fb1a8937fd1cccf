// The host backend a multi-process check under cohortrun or mpirun runs on: the job's, made from
// the environment as the runtime makes it (shared memory where the ranks' hosts are known), and
// checked to be the one the test asked for. Shared by backend_process_check and
// staged_backend_check.
#pragma once

#include <csignal>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/backend_factory.h"
#include "core/config.h"

namespace cohort::ops::testing {

// Throws std::runtime_error naming both when the backend is not `expected` ("gloo", "shm",
// "hierarchical").
inline std::unique_ptr<Backend> job_backend(const Config& config, const std::string& expected) {
  std::signal(SIGPIPE, SIG_IGN);  // as the runtime does before Gloo connects
  auto backend = make_backend(config);
  if (config.hosts_placed) use_shared_memory(backend, config, config.placement);
  if (backend->name() != expected) {
    throw std::runtime_error("expected the " + expected + " backend, got " +
                             std::string(backend->name()));
  }
  return backend;
}

}  // namespace cohort::ops::testing
