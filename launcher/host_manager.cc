#include "launcher/host_manager.h"

#include <set>

#include "cohort/errors.h"

namespace cohort::discovery {

HostManager::HostManager(std::vector<HostSlots> hosts) : hosts_(std::move(hosts)) {
  if (hosts_.empty()) throw InvalidArgument("no hosts to run on");
  std::set<std::string> seen;
  for (const auto& h : hosts_) {
    // Two entries for one host would give it two sets of local ranks.
    if (!seen.insert(h.host).second) {
      throw InvalidArgument("host '" + h.host + "' is listed twice; give it one entry with " +
                            "the sum of its slots");
    }
  }
}

int HostManager::total_slots() const {
  int total = 0;
  for (const auto& h : hosts_) total += h.slots;
  return total;
}

}  // namespace cohort::discovery
