#include "elastic/round_watch.h"

#include "base/log.h"
#include "cohort/errors.h"
#include "core/job_store.h"
#include "rendezvous/elastic_protocol.h"

namespace cohort::elastic::detail {

RoundWatch::RoundWatch(const Config& config, int round)
    : thread_([this, config, round] { watch(config, round); }) {}

RoundWatch::~RoundWatch() {
  done_.cancel("the round is joined");
  thread_.join();
}

void RoundWatch::watch(const Config& config, int round) {
  std::string key = rendezvous::abandon_key(round);
  try {
    auto launcher = open_job_store(config, rendezvous::kElasticScope);
    std::string why = launcher->get(key, config.elastic_timeout, &done_);
    abandoned_.cancel("round " + std::to_string(round) +
                      " was abandoned by the launcher while it formed: " + why);
  } catch (const Error& e) {
    // Joined (done_), or the launcher cannot be asked: the joining's own timeouts still bound it.
    if (!done_.cancelled()) log::debug("watching '", key, "' ended: ", e.what());
  }
}

}  // namespace cohort::elastic::detail
