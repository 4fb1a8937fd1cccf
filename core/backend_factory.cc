#include "core/backend_factory.h"

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "base/net.h"
#include "cohort/errors.h"
#include "core/agreement.h"
#include "core/job_store.h"
#include "ops/gloo_backend.h"
#include "ops/hierarchical_backend.h"
#include "ops/lone_backend.h"
#include "ops/mpi_backend.h"
#include "ops/shm_backend.h"
#include "rendezvous/gloo_store.h"

namespace cohort {
namespace {

ops::GlooBackendOptions gloo_options(const Config& c, const Cancellation* cancel = nullptr,
                                     std::function<void()> on_published = {}) {
  return {.rank = c.placement.rank,
          .size = c.placement.size,
          .hostname = c.hostname,
          .prefix = "global",
          .timeout = c.timeout,
          .cancel = cancel,
          .on_published = std::move(on_published)};
}

// Gloo through the job's store, in `scope`.
std::unique_ptr<ops::Backend> connect_gloo(const Config& c, const std::string& scope,
                                           const Cancellation* cancel = nullptr,
                                           std::function<void()> on_published = {}) {
  try {
    auto job_store = open_job_store(c, scope);
    rendezvous::GlooStore store(*job_store, c.timeout, cancel);
    auto gloo = ops::make_gloo_backend(gloo_options(c, cancel, std::move(on_published)), store);
    check_agreement(*gloo, c);
    return gloo;
  } catch (const InternalError&) {
    throw;
  } catch (const InvalidArgument&) {
    throw;
  } catch (const Error& e) {
    throw InternalError(std::string("rendezvous failed: ") + e.what());
  }
}

// Gloo under mpirun: MPI only bootstraps, trading Gloo's pair addresses; the data then moves over
// Gloo.
std::unique_ptr<ops::Backend> gloo_over_mpi_bootstrap(Config c) {
  auto mpi = ops::make_mpi_backend();
  if (mpi->size() == 1) return std::make_unique<ops::LoneBackend>();
  // Over MPI first: a rank that chose MPI's operations would never join Gloo's bootstrap.
  check_agreement(*mpi, c);
  return ops::make_gloo_backend(gloo_options(c), *mpi);
}

std::unique_ptr<ops::Backend> mpi_operations(const Config& c) {
  auto mpi = ops::make_mpi_backend();
  check_agreement(*mpi, c);
  return mpi;
}

}  // namespace

bool some_host_shared(const std::vector<std::string>& hosts) {
  std::set<std::string> distinct(hosts.begin(), hosts.end());
  return distinct.size() > 1 && distinct.size() < hosts.size();
}

std::vector<std::string> host_names(ops::Backend& world, const Config& c) {
  constexpr size_t kBlock = 256;
  std::string mine = c.hosts_placed ? c.hostname : net::local_host_name();
  std::vector<char> block(kBlock, '\0');
  std::memcpy(block.data(), mine.data(), std::min(mine.size(), kBlock - 1));
  std::vector<char> all(kBlock * world.size());
  std::vector<size_t> counts(world.size(), kBlock);
  world.allgatherv(block.data(), all.data(), counts);
  std::vector<std::string> hosts;
  for (int r = 0; r < world.size(); ++r) hosts.emplace_back(all.data() + r * kBlock);
  return hosts;
}

std::unique_ptr<ops::Backend> make_backend(const Config& c, const std::string& rendezvous_scope,
                                           const Cancellation* cancel,
                                           std::function<void()> on_published) {
  switch (c.launcher) {
    case Config::Launcher::kNone:
      return std::make_unique<ops::LoneBackend>();
    case Config::Launcher::kMpirun:
      if (c.cpu_operations == Config::CpuOperations::kGloo) return gloo_over_mpi_bootstrap(c);
      return mpi_operations(c);
    case Config::Launcher::kCohortrun:
      if (c.placement.size == 1) return std::make_unique<ops::LoneBackend>();
      return connect_gloo(c, rendezvous_scope, cancel, std::move(on_published));
  }
  throw InvalidArgument("unknown launcher");
}

void use_shared_memory(std::unique_ptr<ops::Backend>& world, const Config& config,
                       const Placement& topology, const Cancellation* cancel) {
  if (!config.shared_memory || topology.size == 1 || world->name() != "gloo") return;
  ops::ShmBackendOptions shm{.timeout = config.timeout,
                             .cancel = cancel,
                             .slot_bytes = (config.shared_memory_slot_bytes + 4095) / 4096 * 4096};
  if (topology.local_size == topology.size) {
    world = ops::make_shm_backend(world, shm);
    return;
  }
  if (config.hierarchical == Config::Hierarchy::kOff) return;
  // Every rank decides alike from every rank's host.
  auto hosts = host_names(*world, config);
  if (config.hierarchical == Config::Hierarchy::kAuto && !some_host_shared(hosts)) return;
  world = ops::make_hierarchical_backend(world, {.hosts = std::move(hosts), .shm = shm});
}

}  // namespace cohort
