// How an elastic worker enters a round: it checks in with the launcher, waits for its
// assignment and builds the round's Runtime from it. Used by init() (entry 0, through
// core/elastic_join.h) and by the elastic reset (entry n + 1); rendezvous/elastic_protocol.h has
// the keys.
#pragma once

#include <chrono>
#include <memory>

#include "core/config.h"
#include "core/runtime.h"
#include "rendezvous/elastic_protocol.h"
#include "rendezvous/store.h"

namespace cohort::elastic::detail {

// The launcher's store in the elastic scope, as `config` (the worker's environment) names it.
std::shared_ptr<rendezvous::Store> connect_launcher(const Config& config);

// Time spent in each phase of entering a round, summed over attempts.
struct EntryTimings {
  std::chrono::microseconds assignment{0};
  std::chrono::microseconds connect{0};
};

// Checks in as `entry` for the reason `checkin` gives and builds the Runtime of the round the
// launcher assigns, with the worker's Session (elastic/session.h) attached. If building it fails
// with InternalError (a peer of the new round died), checks in again with the next entry. Throws
// InternalError naming the key and the launcher when the assignment does not come within
// config.elastic_timeout. A worker assigned "exit" leaves the process here with status 0.
std::shared_ptr<Runtime> enter_round(const Config& config,
                                     std::shared_ptr<rendezvous::Store> launcher, int entry,
                                     rendezvous::CheckIn checkin, EntryTimings& timings);

}  // namespace cohort::elastic::detail
