// The worker that agent_rounds.sh gives each simulated agent: it checks in for its first round
// through the job's store (etcd in agent mode, core/job_store.h) exactly as an elastic worker does
// (elastic/round_entry.cc), waits for its assignment, prints it with the wall-clock time it
// arrived, and then sleeps until it is stopped. It builds no data plane: what is measured is the
// agents' round, not Gloo's connections between the workers.
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "core/config.h"
#include "core/job_store.h"
#include "rendezvous/elastic_protocol.h"

int main() {
  using namespace cohort;
  Config config = Config::from_environment();
  auto store = open_job_store(config, rendezvous::kElasticScope);
  store->set(rendezvous::checkin_key(config.worker_id, 0), rendezvous::format_checkin({}));
  auto assignment = rendezvous::parse_assignment(
      store->get(rendezvous::assign_key(config.worker_id, 0), config.elastic_timeout));
  auto now = std::chrono::system_clock::now().time_since_epoch();
  std::printf(
      "assigned round=%d rank=%d size=%d at_ms=%lld\n", assignment.round, assignment.placement.rank,
      assignment.placement.size,
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(now).count()));
  std::fflush(stdout);
  for (;;) ::pause();  // until the agent stops it
}
