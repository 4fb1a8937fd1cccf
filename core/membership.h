// An elastic worker's place in the job: the round it is in, how it got there, and its connection
// to the launcher. Held by the Runtime (so nothing about membership outlives it unless a reset
// hands it on to the next one).
#pragma once

#include <memory>

#include "cohort/elastic/run.h"
#include "rendezvous/elastic_protocol.h"

namespace cohort {

namespace rendezvous {
class Store;
}

struct Membership {
  // The launcher's rendezvous server, scope rendezvous::kElasticScope.
  std::shared_ptr<rendezvous::Store> launcher;
  // This round's entry index n (elastic_protocol.h): also the number of resets so far.
  int entry = 0;
  rendezvous::Assignment assignment;
  elastic::ResetTimings last_reset;  // all zero before the first reset
};

}  // namespace cohort
