// The elastic reset: leave the current round and join the next one in the same process.
#pragma once

#include "rendezvous/elastic_protocol.h"

namespace cohort::elastic::detail {

// Takes the Runtime out of the process's slot and abandons it (no collective shutdown: the world
// is broken or being replaced), checks in with the next entry for the reason `why` gives, and
// installs the Runtime of the round the launcher assigns. A worker assigned "exit" leaves the
// process with status 0. Throws NotInitialized without a runtime, InternalError outside elastic
// mode (the runtime is put back) or when the launcher does not answer.
void reset(const rendezvous::CheckIn& why);

}  // namespace cohort::elastic::detail
