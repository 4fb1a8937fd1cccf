#include "core/backend_factory.h"

#include <cstring>
#include <optional>

#include "cohort/errors.h"
#include "core/lone_backend.h"
#include "ops/gloo_backend.h"
#include "ops/mpi_backend.h"
#include "rendezvous/client.h"
#include "rendezvous/gloo_store.h"
#include "rendezvous/hmac.h"
#include "rendezvous/server.h"

namespace cohort {
namespace {

ops::GlooBackendOptions gloo_options(const Config& c, const Cancellation* cancel = nullptr,
                                     std::function<void()> on_published = {}) {
  return {.rank = c.rank,
          .size = c.size,
          .hostname = c.hostname,
          .prefix = "global",
          .timeout = c.timeout,
          .cancel = cancel,
          .on_published = std::move(on_published)};
}

// Gloo through a rendezvous server at `addr`:`port`, in `scope`.
std::unique_ptr<ops::Backend> connect_gloo(const Config& c, const std::string& addr, int port,
                                           const std::string& secret, const std::string& scope,
                                           const Cancellation* cancel = nullptr,
                                           std::function<void()> on_published = {}) {
  try {
    rendezvous::RendezvousClient client(addr, port, secret, c.timeout, scope);
    rendezvous::GlooStore store(client, c.timeout, cancel);
    return ops::make_gloo_backend(gloo_options(c, cancel, std::move(on_published)), store);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    throw InternalError(std::string("rendezvous failed: ") + e.what());
  }
}

// Gloo under mpirun: MPI only bootstraps. Rank 0 serves a signed rendezvous with a fresh secret
// and tells the others where through MPI; the data then moves over Gloo. (An exchange of Gloo's
// keys through MPI collectives alone does not work: Gloo's connect reads the "rank_<i>" keys of
// the lower ranks only, so the ranks do not wait at the same points.)
std::unique_ptr<ops::Backend> gloo_over_mpi_bootstrap(Config c) {
  auto mpi = ops::make_mpi_backend();
  c.rank = mpi->rank();
  c.size = mpi->size();
  if (c.size == 1) return std::make_unique<LoneBackend>();
  std::optional<rendezvous::RendezvousServer> server;
  char published[128] = {};
  if (c.rank == 0) {
    std::string secret = rendezvous::random_bytes(rendezvous::kSecretSize);
    server.emplace(c.hostname, secret);
    std::snprintf(published, sizeof published, "%d %s", server->port(),
                  rendezvous::to_hex(secret).c_str());
  }
  mpi->broadcast(published, sizeof published, 0);
  int port = std::atoi(published);
  std::string secret = rendezvous::from_hex(std::strchr(published, ' ') + 1);
  auto gloo = connect_gloo(c, c.hostname, port, secret, "");
  mpi->barrier();  // the server must outlive every rank's rendezvous
  return gloo;
}

}  // namespace

std::unique_ptr<ops::Backend> make_backend(const Config& c, const std::string& rendezvous_scope,
                                           const Cancellation* cancel,
                                           std::function<void()> on_published) {
  switch (c.launcher) {
    case Config::Launcher::kNone:
      return std::make_unique<LoneBackend>();
    case Config::Launcher::kMpirun:
      if (c.cpu_operations == Config::CpuOperations::kGloo) return gloo_over_mpi_bootstrap(c);
      return ops::make_mpi_backend();
    case Config::Launcher::kCohortrun:
      if (c.size == 1) return std::make_unique<LoneBackend>();
      return connect_gloo(c, c.rendezvous_addr, c.rendezvous_port, c.secret, rendezvous_scope,
                          cancel, std::move(on_published));
  }
  throw InvalidArgument("unknown launcher");
}

}  // namespace cohort
