#include "discovery/agent_name.h"

#include <unistd.h>

#include <string>

#include "cohort/errors.h"
#include "discovery/agent_records.h"
#include "discovery/clock.h"

namespace cohort::discovery {

void claim_node_name(rendezvous::EtcdStore& store, const AgentOptions& options, int64_t lease) {
  auto deadline = steady_now() + options.lease_ttl + std::chrono::seconds(1);
  std::string key = name_key(options.node);
  while (!store.create(key, std::to_string(::getpid()), lease)) {
    auto listing = store.list(key);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady_now());
    if (left.count() <= 0 || !store.wait_for_change(key, listing.revision, left)) {
      throw InvalidArgument("node name '" + options.node +
                            "' is held by another live agent of job '" + options.job_id +
                            "' (give each agent its own --node-name)");
    }
  }
}

}  // namespace cohort::discovery
