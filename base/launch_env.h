// The environment variables through which a launcher (cohortrun) hands a worker its place in the
// job. Named once here so the launcher that writes them and the runtime that reads them agree.
#pragma once

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
// 64 hex characters (32 bytes): the per-job HMAC key. Never passed on a command line.
inline constexpr const char* kSecret = "COHORT_SECRET";
// Elastic mode: the worker's id for the whole job, given instead of the rank and size, which the
// launcher assigns for each round (see rendezvous/elastic_protocol.h).
inline constexpr const char* kWorkerId = "COHORT_WORKER_ID";

}  // namespace cohort::env
