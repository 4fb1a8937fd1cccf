#include "core/backend_factory.h"

#include "cohort/errors.h"
#include "core/lone_backend.h"
#include "discovery/rendezvous_client.h"
#include "ops/gloo_backend.h"
#include "ops/mpi_backend.h"

namespace cohort {
namespace {

std::unique_ptr<ops::Backend> connect_gloo(const Config& c) {
  try {
    discovery::RendezvousClient client(c.rendezvous_addr, c.rendezvous_port, c.secret, c.timeout);
    discovery::RendezvousStore store(client, c.timeout);
    return ops::make_gloo_backend({.rank = c.rank,
                                   .size = c.size,
                                   .hostname = c.hostname,
                                   .prefix = "global",
                                   .timeout = c.timeout},
                                  store);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    throw InternalError(std::string("rendezvous failed: ") + e.what());
  }
}

}  // namespace

std::unique_ptr<ops::Backend> make_backend(const Config& c) {
  switch (c.launcher) {
    case Config::Launcher::kNone:
      return std::make_unique<LoneBackend>();
    case Config::Launcher::kMpirun:
      return ops::make_mpi_backend();
    case Config::Launcher::kCohortrun:
      if (c.size == 1) return std::make_unique<LoneBackend>();
      return connect_gloo(c);
  }
  throw InvalidArgument("unknown launcher");
}

}  // namespace cohort
