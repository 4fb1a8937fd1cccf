// The job's hosts and the placement of ranks on their slots. A static job fixes the host list at
// start; elastic mode will feed it host-discovery updates and retire failing hosts, so every
// launcher decision about "where" goes through this one type.
#pragma once

#include <vector>

#include "launcher/hosts.h"

namespace cohort::discovery {

class HostManager {
 public:
  // Throws InvalidArgument for an empty list or a host named twice.
  explicit HostManager(std::vector<HostSlots> hosts);

  const std::vector<HostSlots>& hosts() const { return hosts_; }
  int total_slots() const;
  // Ranks fill the hosts in order, slot by slot; throws if fewer than `np` slots exist.
  std::vector<SlotAssignment> assign(int np) const { return assign_slots(hosts_, np); }

 private:
  std::vector<HostSlots> hosts_;
};

}  // namespace cohort::discovery
