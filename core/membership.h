// An elastic worker's place in the job: the round it is in, how it got there, and its connection
// to the launcher. Held by the Runtime (so nothing about membership outlives it unless a reset
// hands it on to the next one).
#pragma once

#include <memory>

#include "cohort/elastic/run.h"
#include "discovery/elastic_protocol.h"

namespace cohort {

namespace discovery {
class RendezvousClient;
}

struct Membership {
  // The launcher's rendezvous server, scope discovery::kElasticScope.
  std::shared_ptr<discovery::RendezvousClient> launcher;
  // This round's entry index n (elastic_protocol.h): also the number of resets so far.
  int entry = 0;
  discovery::Assignment assignment;
  elastic::ResetTimings last_reset;  // all zero before the first reset
};

}  // namespace cohort
