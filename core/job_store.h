// The job's store, seen in one scope: the launcher's rendezvous server, or etcd in agent mode. The
// one place that chooses, so that Gloo's rendezvous, the elastic check-ins and the round watch
// reach the same store whichever it is.
#pragma once

#include <memory>
#include <string>

#include "core/config.h"
#include "rendezvous/store.h"

namespace cohort {

// Throws cohort::Error when the store cannot be set up (a bad endpoint).
std::unique_ptr<rendezvous::Store> open_job_store(const Config& config, const std::string& scope);

}  // namespace cohort
