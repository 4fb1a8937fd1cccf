#include "core/job_store.h"

#include "rendezvous/client.h"
#include "rendezvous/etcd_store.h"

namespace cohort {

std::unique_ptr<rendezvous::Store> open_job_store(const Config& config, const std::string& scope) {
  if (config.etcd_endpoints.empty()) {
    return std::make_unique<rendezvous::RendezvousClient>(
        config.rendezvous_addr, config.rendezvous_port, config.secret, config.timeout, scope,
        config.fault_clock_skew);
  }
  return std::make_unique<rendezvous::EtcdStore>(
      rendezvous::EtcdStoreOptions{.etcd = {.endpoints = config.etcd_endpoints,
                                            .ca_file = config.etcd_ca_file,
                                            .cert_file = config.etcd_cert_file,
                                            .key_file = config.etcd_key_file,
                                            .timeout = config.timeout},
                                   .prefix = config.etcd_prefix + scope + "/",
                                   .secret = config.secret});
}

}  // namespace cohort
