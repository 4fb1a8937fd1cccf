#include "elastic_job/elastic_timeouts.h"

#include "base/env_value.h"
#include "base/launch_env.h"
#include "base/log.h"
#include "base/peer_timeouts.h"
#include "cohort/errors.h"
#include "launcher/seconds_text.h"

namespace cohort::discovery {
namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;

// With the workers' own rule (core/config_table.cc), so that the launcher refuses exactly the
// values they would refuse and checks the durations they will hold.
// Whether the variable is set.
template <class Rep>
bool read_worker_variable(const char* name, const env::DurationRule& rule, Rep& held) {
  auto text = env::process_getenv(name);
  if (text) held = duration_cast<Rep>(env::parse_duration(name, *text, rule));
  return text.has_value();
}

}  // namespace

std::optional<std::string> check_elastic_timeouts(const ElasticTimeouts& t) {
  if (2 * duration_cast<microseconds>(t.checkin) < 3 * t.worker_peer_timeout) {
    return "--checkin-timeout " + seconds_text(t.checkin) +
           " is less than 1.5 x COHORT_PEER_TIMEOUT_SECONDS " +
           seconds_text(t.worker_peer_timeout) +
           ": a healthy worker that learns of a broken round from its heartbeat could be killed "
           "before it checks in";
  }
  if (t.worker_timeout <= t.worker_peer_timeout) {
    return "COHORT_TIMEOUT_SECONDS " + seconds_text(t.worker_timeout) +
           " is not longer than COHORT_PEER_TIMEOUT_SECONDS " +
           seconds_text(t.worker_peer_timeout) +
           ": a collective would time out before the heartbeat could name the peer that failed";
  }
  if (t.worker_elastic < t.elastic) {
    return "COHORT_ELASTIC_TIMEOUT_SECONDS " + seconds_text(t.worker_elastic) +
           " is shorter than --elastic-timeout " + seconds_text(t.elastic) +
           ": workers would give up waiting for their next round while cohortrun still waits "
           "for hosts";
  }
  return std::nullopt;
}

ElasticTimeouts with_worker_environment(ElasticTimeouts t, std::optional<std::string>* fitted) {
  env::PeerTimeouts peer{.timeout = t.worker_timeout, .peer = t.worker_peer_timeout};
  peer.timeout_set =
      read_worker_variable("COHORT_TIMEOUT_SECONDS", env::kSecondsInMilliseconds, peer.timeout);
  peer.peer_set =
      read_worker_variable("COHORT_PEER_TIMEOUT_SECONDS", env::kSecondsInMicroseconds, peer.peer);
  read_worker_variable("COHORT_ELASTIC_TIMEOUT_SECONDS", env::kSecondsInMilliseconds,
                       t.worker_elastic);
  auto warning = env::fit_peer_timeouts(peer);
  if (fitted) *fitted = warning;
  t.worker_timeout = peer.timeout;
  t.worker_peer_timeout = peer.peer;
  return t;
}

void check_job_timeouts(const ElasticTimeouts& flags) {
  std::optional<std::string> fitted;
  ElasticTimeouts t = with_worker_environment(flags, &fitted);
  if (fitted) log::warning(*fitted);
  if (auto why = check_elastic_timeouts(t)) throw InvalidArgument(*why);
}

}  // namespace cohort::discovery
