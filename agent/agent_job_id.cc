#include "agent/agent_job_id.h"

#include <string>

#include "base/log.h"
#include "cohort/errors.h"
#include "rendezvous/signed_value.h"

namespace cohort::discovery {
namespace {

constexpr const char* kMarkerKey = "job";
constexpr const char* kRunning = "running";
constexpr const char* kEnded = "ended";

// Why bytes at the marker that this secret did not seal keep the job out.
std::string foreign_marker(const std::string& raw, const std::string& id) {
  std::string keys = "/cohort/" + id + "/";
  std::string free_it =
      "; give this job a new --rdzv-id, or free the id once nothing uses it "
      "(etcdctl del --prefix " +
      keys + ")";
  auto claimed = rendezvous::unverified_value(raw);
  if (!claimed) {
    return "job id '" + id + "' is taken in etcd: " + keys + kMarkerKey +
           " holds bytes that no Cohort job sealed (written without any job's secret)" + free_it;
  }
  std::string state = *claimed == kEnded ? "was used by a job that has ended" : "is in use";
  return "job id '" + id + "' " + state + " with another COHORT_SECRET (its keys under " + keys +
         " are sealed with another secret: a second job given the same id, or a re-run with a "
         "new secret)" +
         free_it;
}

}  // namespace

void claim_job_id(rendezvous::EtcdStore& store, const AgentOptions& options) {
  // Twice: the marker may be removed between the failed create and the read.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (store.create_new(kMarkerKey, kRunning)) return;  // set now, or by this job before
    auto marker = store.held(kMarkerKey);
    using State = rendezvous::EtcdStore::Held::State;
    if (marker.state == State::kUnset) continue;
    if (marker.state == State::kRefused) {
      throw InvalidArgument(foreign_marker(marker.value, options.job_id));
    }
    if (marker.value == kEnded) {
      throw InvalidArgument("job '" + options.job_id +
                            "' already ended in etcd: give a new job a new --rdzv-id (or remove "
                            "the old job's keys: etcdctl del --prefix /cohort/" +
                            options.job_id + "/)");
    }
    return;  // sealed by this secret, and not ended: an agent joining its job
  }
  throw Error("job id '" + options.job_id + "': its marker in etcd keeps changing");
}

void mark_job_ended(rendezvous::EtcdStore& store) {
  try {
    store.set(kMarkerKey, kEnded);
  } catch (const Error& e) {
    log::info("agent: could not mark the job ended in etcd: ", e.what());
  }
}

}  // namespace cohort::discovery
