// The environment variables through which a launcher (cohortrun) hands a worker its place in the
// job, named once here so the launcher that writes them and the runtime that reads them agree; and
// which launcher started this process, told by the variables it set.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace cohort::env {

inline constexpr const char* kRank = "COHORT_RANK";
inline constexpr const char* kSize = "COHORT_SIZE";
inline constexpr const char* kLocalRank = "COHORT_LOCAL_RANK";
inline constexpr const char* kLocalSize = "COHORT_LOCAL_SIZE";
inline constexpr const char* kCrossRank = "COHORT_CROSS_RANK";
inline constexpr const char* kCrossSize = "COHORT_CROSS_SIZE";
// The address this worker's Gloo device and control socket listen on.
inline constexpr const char* kHostname = "COHORT_HOSTNAME";
// A network interface whose IPv4 address replaces COHORT_HOSTNAME (cohortrun --network-interface),
// looked up on the worker's own host.
inline constexpr const char* kNetworkInterface = "COHORT_NETWORK_INTERFACE";
inline constexpr const char* kRendezvousAddr = "COHORT_RENDEZVOUS_ADDR";
inline constexpr const char* kRendezvousPort = "COHORT_RENDEZVOUS_PORT";
// Instead of the rendezvous server's address: the job's store is on etcd (cohortrun's agent mode,
// docs/agents.md). Comma-separated http:// or https:// URLs; the key prefix of the job
// ("/cohort/<job id>/"); for https, the CA, and this client's certificate and key where etcd asks.
inline constexpr const char* kEtcdEndpoints = "COHORT_ETCD_ENDPOINTS";
inline constexpr const char* kEtcdPrefix = "COHORT_ETCD_PREFIX";
inline constexpr const char* kEtcdCaFile = "COHORT_ETCD_CA_FILE";
inline constexpr const char* kEtcdCertFile = "COHORT_ETCD_CERT_FILE";
inline constexpr const char* kEtcdKeyFile = "COHORT_ETCD_KEY_FILE";
// 64 hex characters (32 bytes): the per-job HMAC key. Never passed on a command line.
inline constexpr const char* kSecret = "COHORT_SECRET";
// Elastic mode: the worker's id for the whole job, given instead of the rank and size, which the
// launcher assigns for each round (see rendezvous/elastic_protocol.h).
inline constexpr const char* kWorkerId = "COHORT_WORKER_ID";
// Read by cohortrun's agents, for tests: ROUND:MARKER_FILE (agent/agent_job.h).
inline constexpr const char* kFaultAgentKillAt = "COHORT_FAULT_AGENT_KILL_AT";

// Horovod's names for the same placement, set beside COHORT_RANK ... in a static job, so that
// programs written for horovodrun find them (Horovod's own tests read HOROVOD_RANK). Not in an
// elastic or agent job: the placement changes with each round, and a value fixed when the worker
// started would be wrong after the first reset (hvd.rank() and the rest are always current).
// Open MPI's OMPI_COMM_WORLD_* are never set: they would tell MPI, and Cohort itself
// (launched_by_mpirun), that mpirun started the worker.
inline constexpr const char* kHorovodRank = "HOROVOD_RANK";
inline constexpr const char* kHorovodSize = "HOROVOD_SIZE";
inline constexpr const char* kHorovodLocalRank = "HOROVOD_LOCAL_RANK";
inline constexpr const char* kHorovodLocalSize = "HOROVOD_LOCAL_SIZE";
inline constexpr const char* kHorovodCrossRank = "HOROVOD_CROSS_RANK";
inline constexpr const char* kHorovodCrossSize = "HOROVOD_CROSS_SIZE";

// Set by Open MPI's mpirun (the second by its PMIx server) for every process it starts.
inline constexpr const char* kOmpiWorldSize = "OMPI_COMM_WORLD_SIZE";
inline constexpr const char* kPmixRank = "PMIX_RANK";

// Reads one variable; tests pass a map instead of the process's environment.
using Getenv = std::function<std::optional<std::string>(const char* name)>;
std::optional<std::string> process_getenv(const char* name);

enum class Launcher { kNone, kCohortrun, kMpirun };

// Open MPI's mpirun started this process: OMPI_COMM_WORLD_SIZE or PMIX_RANK is set.
bool launched_by_mpirun(const Getenv& getenv);
// cohortrun where COHORT_RANK or COHORT_WORKER_ID is set (whatever else is), else mpirun, else
// none: a world of one.
Launcher detect_launcher(const Getenv& getenv);

}  // namespace cohort::env
