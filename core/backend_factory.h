// Builds the data-plane backend that the configuration asks for, joining the other ranks.
#pragma once

#include <memory>

#include "core/config.h"
#include "ops/backend.h"

namespace cohort {

// `rendezvous_scope` namespaces the Gloo rendezvous keys on cohortrun's server (elastic mode: one
// scope per round, so a round never reads a previous round's addresses).
std::unique_ptr<ops::Backend> make_backend(const Config& config,
                                           const std::string& rendezvous_scope = "");

}  // namespace cohort
