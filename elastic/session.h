// An elastic worker's session: its connection to the launcher, the round it is in and how it got
// there. Kept with the round's Runtime as its attachment (core/runtime.h), so it is dropped with
// that Runtime unless a reset hands it on to the next one.
#pragma once

#include <memory>

#include "cohort/elastic/run.h"
#include "core/runtime.h"
#include "rendezvous/elastic_protocol.h"
#include "rendezvous/store.h"

namespace cohort::elastic::detail {

struct Session final : RuntimeAttachment {
  // The launcher's store, scope rendezvous::kElasticScope.
  std::shared_ptr<rendezvous::Store> launcher;
  // This round's entry index n (elastic_protocol.h): also the number of resets so far.
  int entry = 0;
  rendezvous::Assignment assignment;
  ResetTimings last_reset;  // all zero before the first reset
};

// The session `runtime` belongs to; nullptr outside elastic mode.
inline Session* session_of(const Runtime& runtime) {
  return dynamic_cast<Session*>(runtime.attachment());
}

}  // namespace cohort::elastic::detail
