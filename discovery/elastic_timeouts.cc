#include "discovery/elastic_timeouts.h"

#include <cmath>
#include <cstdlib>

#include "cohort/errors.h"
#include "discovery/seconds_text.h"

namespace cohort::discovery {
namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::milliseconds;

// The workers' own parser (core/config.cc) refuses the same values with the same names.
std::optional<microseconds> read_seconds(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return std::nullopt;
  char* end = nullptr;
  double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(value) || value < 1e-3 || value > 1e9) {
    throw InvalidArgument(std::string(name) + "='" + text +
                          "' is not a number of seconds between 0.001 and 1e9");
  }
  return microseconds(static_cast<int64_t>(std::llround(value * 1e6)));
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

ElasticTimeouts with_worker_environment(ElasticTimeouts t) {
  if (auto v = read_seconds("COHORT_TIMEOUT_SECONDS"))
    t.worker_timeout = duration_cast<milliseconds>(*v);
  if (auto v = read_seconds("COHORT_PEER_TIMEOUT_SECONDS")) t.worker_peer_timeout = *v;
  if (auto v = read_seconds("COHORT_ELASTIC_TIMEOUT_SECONDS"))
    t.worker_elastic = duration_cast<milliseconds>(*v);
  return t;
}

}  // namespace cohort::discovery
