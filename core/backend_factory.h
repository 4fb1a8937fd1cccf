// Builds the data-plane backend that the configuration asks for, joining the other ranks; its
// first exchange checks that every rank holds the same alike settings (core/agreement.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/cancellation.h"
#include "base/placement.h"
#include "core/config.h"
#include "ops/backend.h"

namespace cohort {

// `rendezvous_scope` namespaces the Gloo rendezvous keys on cohortrun's server (elastic mode: one
// scope per round, so a round never reads a previous round's addresses). `cancel` abandons the
// connect at once (an elastic round that the launcher gave up while it formed).
std::unique_ptr<ops::Backend> make_backend(const Config& config,
                                           const std::string& rendezvous_scope = "",
                                           const Cancellation* cancel = nullptr,
                                           std::function<void()> on_published = {});

// Every rank's host identity, `[r]` rank r's: the address cohortrun placed it on (COHORT_HOSTNAME,
// so hosts that are one machine in tests stay apart), or this machine's name under mpirun.
// Collective over `world`'s ranks. The shared-memory backends and the host leaders
// (core/leader.h) group a host's ranks by it.
std::vector<std::string> host_names(ops::Backend& world, const Config& config);
// Whether `hosts` (host_names()) are several and some has several ranks: where COHORT_HIERARCHICAL
// and COHORT_CONTROL_LEADERS, both automatic by default, turn themselves on.
bool some_host_shared(const std::vector<std::string>& hosts);

// Moves `world`'s collectives to shared memory where it is a Gloo world of several ranks and
// COHORT_SHARED_MEMORY_DISABLE is not set: all of them when every rank shares this host
// (ops/shm_backend.h); allreduce, broadcast, allgather and reducescatter through each host's
// shared memory and across hosts (ops/hierarchical_backend.h) when the world spans hosts, some of
// them with several ranks, or as COHORT_HIERARCHICAL says. Replaces `world` with the backend that
// wraps it; leaves it as it is otherwise, or when the set-up throws. Collective over `world`'s
// ranks.
void use_shared_memory(std::unique_ptr<ops::Backend>& world, const Config& config,
                       const Placement& topology, const Cancellation* cancel = nullptr);

}  // namespace cohort
