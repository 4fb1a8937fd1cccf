#include "core/config.h"

#include <cctype>
#include <cstdlib>
#include <limits>

#include "base/env_value.h"
#include "base/launch_env.h"
#include "base/net.h"
#include "base/peer_timeouts.h"
#include "cohort/errors.h"
#include "core/config_table.h"
#include "rendezvous/etcd_client.h"
#include "rendezvous/hmac.h"

namespace cohort {
namespace {

using env::invalid;
using env::parse_integer;

std::string decode_hex(const char* name, const std::string& value) {
  if (value.size() != 64) invalid(name, "<hidden>", "expected 64 hex characters");
  try {
    return rendezvous::from_hex(value);  // the agents' parser: hex digits only, no sign or space
  } catch (const InvalidArgument&) {
    invalid(name, "<hidden>", "expected 64 hex characters");
  }
}

// Returns the variable's value; throws naming it, and `because` (the variable whose presence
// requires it), when it is not set.
std::string required(const Config::Getenv& getenv, const char* name, const char* because) {
  auto v = getenv(name);
  if (!v) {
    throw InvalidArgument(std::string(name) + " is not set, but " + because +
                          " is: the launcher's environment is incomplete");
  }
  return *v;
}

// The job's store on etcd: every endpoint an http:// or https:// URL, and a prefix that is a path
// of its own ("/cohort/<job>/"), so that no other job's keys fall under it.
void read_etcd(const Config::Getenv& getenv, Config& c, const std::string& endpoints) {
  if (getenv(env::kRendezvousAddr)) {
    throw InvalidArgument(std::string(env::kRendezvousAddr) + " and " + env::kEtcdEndpoints +
                          " are both set: a job's store is either the launcher's or etcd");
  }
  try {
    c.etcd_endpoints = rendezvous::parse_etcd_endpoints(endpoints);
  } catch (const InvalidArgument& e) {
    invalid(env::kEtcdEndpoints, endpoints, e.what());
  }
  c.etcd_prefix = required(getenv, env::kEtcdPrefix, env::kEtcdEndpoints);
  if (!c.etcd_prefix.starts_with('/') || !c.etcd_prefix.ends_with('/') || c.etcd_prefix == "/") {
    invalid(env::kEtcdPrefix, c.etcd_prefix, "expected a key path like /cohort/<job>/");
  }
  c.etcd_ca_file = getenv(env::kEtcdCaFile).value_or("");
  c.etcd_cert_file = getenv(env::kEtcdCertFile).value_or("");
  c.etcd_key_file = getenv(env::kEtcdKeyFile).value_or("");
}

void read_rendezvous(const Config::Getenv& getenv, Config& c, const char* because) {
  c.secret = decode_hex(env::kSecret, required(getenv, env::kSecret, because));
  if (auto endpoints = getenv(env::kEtcdEndpoints)) return read_etcd(getenv, c, *endpoints);
  c.rendezvous_addr = required(getenv, env::kRendezvousAddr, because);
  c.rendezvous_port = static_cast<int>(
      parse_integer(env::kRendezvousPort, required(getenv, env::kRendezvousPort, because), 1,
                    std::numeric_limits<uint16_t>::max()));
}

// Ids name rendezvous keys and log lines: a short word without separators of their own.
void check_worker_id(const std::string& id) {
  if (id.empty()) invalid(env::kWorkerId, id, "must not be empty");
  if (id.size() > 128) invalid(env::kWorkerId, id, "longer than 128 characters");
  for (char ch : id) {
    bool allowed = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' ||
                   ch == ':' || ch == '-';
    if (!allowed) invalid(env::kWorkerId, id, "may contain only A-Z a-z 0-9 . _ : -");
  }
}

// The worker listens on the interface's IPv4 address, found here, on the worker's own host.
std::string interface_address(const std::string& name) {
  if (name.empty()) invalid(env::kNetworkInterface, name, "expected an interface name");
  try {
    return net::interface_ipv4(name);
  } catch (const Error& e) {
    invalid(env::kNetworkInterface, name, e.what());
  }
}

// Elastic mode: the id and the launcher's address; the rank and size come with each round.
void read_elastic_worker(const Config::Getenv& getenv, Config& c) {
  for (const char* placement : {env::kRank, env::kSize, env::kLocalRank, env::kLocalSize,
                                env::kCrossRank, env::kCrossSize}) {
    if (getenv(placement)) {
      throw InvalidArgument(std::string(placement) + " is set together with " + env::kWorkerId +
                            ": an elastic worker gets its rank and size from the launcher for "
                            "each round, so the launcher must not set " +
                            placement);
    }
  }
  c.worker_id = *getenv(env::kWorkerId);
  check_worker_id(c.worker_id);
  read_rendezvous(getenv, c, env::kWorkerId);
  if (auto host = getenv(env::kHostname)) c.hostname = *host;
}

// A rank's index among `count` ranks: the count is 1 to the world size, the index below it.
void read_index_pair(const Config::Getenv& getenv, const Config& c, const char* index_name,
                     const char* count_name, int& index, int& count) {
  int size = c.placement.size;
  count = static_cast<int>(parse_integer(count_name, *getenv(count_name), 1, size));
  index = static_cast<int>(parse_integer(index_name, *getenv(index_name), 0, size - 1));
  if (index >= count) {
    invalid(index_name, std::to_string(index),
            "must be below " + std::string(count_name) + "=" + std::to_string(count));
  }
}

// The launcher's view of hosts: all four variables, as cohortrun sets them, or none (the runtime
// then works the placement out itself). Half a placement would describe no host layout.
void read_placement(const Config::Getenv& getenv, Config& c) {
  const char* names[] = {env::kLocalRank, env::kLocalSize, env::kCrossRank, env::kCrossSize};
  const char* present = nullptr;
  const char* absent = nullptr;
  for (const char* name : names) {
    if (getenv(name)) {
      present = name;
    } else {
      absent = name;
    }
  }
  if (!present) return;
  if (absent) {
    throw InvalidArgument(std::string(present) + " is set but " + absent +
                          " is not: COHORT_LOCAL_RANK, COHORT_LOCAL_SIZE, COHORT_CROSS_RANK and "
                          "COHORT_CROSS_SIZE go together");
  }
  Placement& p = c.placement;
  read_index_pair(getenv, c, env::kLocalRank, env::kLocalSize, p.local_rank, p.local_size);
  read_index_pair(getenv, c, env::kCrossRank, env::kCrossSize, p.cross_rank, p.cross_size);
  c.hosts_placed = true;
}

void read_cohortrun_placement(const Config::Getenv& getenv, Config& c) {
  if (getenv(env::kWorkerId)) return read_elastic_worker(getenv, c);
  Placement& p = c.placement;
  p.size = static_cast<int>(
      parse_integer(env::kSize, required(getenv, env::kSize, env::kRank), 1, 1 << 20));
  p.rank = static_cast<int>(
      parse_integer(env::kRank, required(getenv, env::kRank, env::kRank), 0, p.size - 1));
  if (p.size > 1) read_rendezvous(getenv, c, env::kRank);
  if (auto host = getenv(env::kHostname)) c.hostname = *host;
  read_placement(getenv, c);
}

// COHORT_TIMEOUT_SECONDS must be longer than COHORT_PEER_TIMEOUT_SECONDS: the one the user did
// not set is fitted to the other; both set and inconsistent are refused.
void fit_timeouts(const Config::Getenv& getenv, Config& c) {
  env::PeerTimeouts t{.timeout = c.timeout,
                      .peer = c.peer_timeout,
                      .timeout_set = getenv("COHORT_TIMEOUT_SECONDS").has_value(),
                      .peer_set = getenv("COHORT_PEER_TIMEOUT_SECONDS").has_value()};
  c.timeouts_fitted = env::fit_peer_timeouts(t);
  c.timeout = t.timeout;
  c.peer_timeout = t.peer;
}

}  // namespace

std::string_view to_string(Config::CpuOperations ops) {
  return ops == Config::CpuOperations::kGloo ? "gloo" : "mpi";
}

Config Config::from(const Getenv& getenv) {
  Config c;
  c.launcher = env::detect_launcher(getenv);
  c.cpu_operations = c.launcher == Launcher::kMpirun ? CpuOperations::kMpi : CpuOperations::kGloo;
  // The settings first (the CPU operations' default above depends on the launcher only), then
  // the launch environment, whose variables are read together.
  for (const config_table::Setting& setting : config_table::settings()) {
    if (auto value = getenv(setting.name)) config_table::apply(setting, *value, c);
  }
  fit_timeouts(getenv, c);
  if (c.cpu_operations == CpuOperations::kMpi && c.launcher != Launcher::kMpirun) {
    invalid("COHORT_CPU_OPERATIONS", "mpi", "the MPI backend needs a job started by mpirun");
  }
  if (c.launcher == Launcher::kCohortrun) read_cohortrun_placement(getenv, c);
  if (c.launcher == Launcher::kMpirun) {
    // Gloo under mpirun listens on this host's name (set COHORT_HOSTNAME to choose an address).
    c.hostname = getenv(env::kHostname).value_or(net::local_host_name());
  }
  if (auto name = getenv(env::kNetworkInterface)) c.hostname = interface_address(*name);
  return c;
}

Config Config::from_environment() {
  return from(env::process_getenv);
}

}  // namespace cohort
