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

std::string job_keys(const std::string& id) {
  return "/cohort/" + id + "/";
}

std::string free_it(const std::string& id) {
  return "; give this job a new --rdzv-id, or free the id once nothing uses it (etcdctl del "
         "--prefix " +
         job_keys(id) + ")";
}

// Why bytes at the marker that this secret did not seal keep the job out.
std::string foreign_marker(const std::string& raw, const std::string& id) {
  std::string keys = job_keys(id);
  auto claimed = rendezvous::unverified_value(raw);
  if (!claimed) {
    return "job id '" + id + "' is taken in etcd: " + keys + kMarkerKey +
           " holds bytes that no Cohort job sealed (written without any job's secret)" +
           free_it(id);
  }
  std::string state = *claimed == kEnded ? "was used by a job that has ended" : "is in use";
  return "job id '" + id + "' " + state + " with another COHORT_SECRET (its keys under " + keys +
         " are sealed with another secret: a second job given the same id, or a re-run with a "
         "new secret)" +
         free_it(id);
}

// Why names or rounds that this secret did not seal keep the job out of an id without a marker.
std::string foreign_keys(int count, const std::string& id) {
  std::string keys = job_keys(id);
  return "job id '" + id + "' is in use with another COHORT_SECRET (its marker " + keys +
         kMarkerKey + " is missing, but " + std::to_string(count) + " of its agents' names and " +
         "rounds under " + keys + " are sealed with another secret: a job of that secret runs, " +
         "or ran, there)" + free_it(id);
}

// How many of the values `listing` left out another job sealed: bytes in a sealed value's form.
// Not bytes that no job sealed, which are no job's record (the round keys' garbage that the job
// replaces, docs/agents.md).
int sealed_by_another(const rendezvous::EtcdStore::Listing& listing) {
  int count = 0;
  for (const auto& [key, raw] : listing.refused) {
    if (rendezvous::unverified_value(raw)) ++count;
  }
  return count;
}

}  // namespace

void claim_job_id(rendezvous::EtcdStore& store, const AgentOptions& options) {
  using State = rendezvous::EtcdStore::Held::State;
  using rendezvous::KeyRange;
  // Twice: the marker may be removed or set between the reads and the create.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto marker = store.held(kMarkerKey);
    if (marker.state == State::kSealed && marker.value == kEnded) {
      throw InvalidArgument("job '" + options.job_id +
                            "' already ended in etcd: give a new job a new --rdzv-id (or remove "
                            "the old job's keys: etcdctl del --prefix " +
                            job_keys(options.job_id) + ")");
    }
    if (marker.state == State::kSealed) return;  // an agent joining its job
    auto held = store.list({KeyRange::under("names/"), KeyRange::under("rounds/")});
    if (!held.values.empty()) {  // this job holds the id; its marker was deleted or overwritten
      log::warning("agent: the marker ", job_keys(options.job_id), kMarkerKey,
                   " is missing or not sealed by this job, whose agents or rounds are there; "
                   "setting it again");
      keep_job_marker(store);
      return;
    }
    if (marker.state == State::kRefused) {
      throw InvalidArgument(foreign_marker(marker.value, options.job_id));
    }
    if (int foreign = sealed_by_another(held)) {
      throw InvalidArgument(foreign_keys(foreign, options.job_id));
    }
    if (store.create_new(kMarkerKey, kRunning)) return;  // set now, or by this job meanwhile
  }
  throw Error("job id '" + options.job_id + "': its marker in etcd keeps changing");
}

void keep_job_marker(rendezvous::EtcdStore& store) {
  store.create(kMarkerKey, kRunning, 0);  // false: this job's own marker is there
}

void mark_job_ended(rendezvous::EtcdStore& store) {
  try {
    store.set(kMarkerKey, kEnded);
  } catch (const Error& e) {
    log::info("agent: could not mark the job ended in etcd: ", e.what());
  }
}

}  // namespace cohort::discovery
