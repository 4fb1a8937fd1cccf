#include "core/config.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "base/launch_env.h"
#include "base/net.h"
#include "cohort/errors.h"

namespace cohort {
namespace {

[[noreturn]] void invalid(const char* name, const std::string& value, const std::string& why) {
  throw InvalidArgument(std::string(name) + "='" + value + "' is invalid: " + why);
}

long long parse_integer(const char* name, const std::string& value, long long lo, long long hi) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    invalid(name, value, "expected an integer");
  }
  if (used != value.size()) invalid(name, value, "expected an integer");
  if (v < lo || v > hi) {
    invalid(name, value, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  }
  return v;
}

std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// A positive number of `unit`s (fractions allowed); `per_unit` microseconds make one unit, and
// `resolution` microseconds are the shortest time the setting can hold. A shorter value would be
// cut to 0, which means "at once" or "never" rather than what was asked, so it is refused. 0 itself
// is accepted only where it has a meaning of its own (`zero_allowed`).
std::chrono::microseconds parse_duration(const char* name, const std::string& value,
                                         const std::string& unit, double per_unit,
                                         double resolution, bool zero_allowed = false) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    invalid(name, value, "expected a number of " + unit);
  }
  if (used != value.size() || !(v > 0 || (zero_allowed && v == 0))) {
    invalid(name, value,
            std::string("expected a ") + (zero_allowed ? "non-negative" : "positive") +
                " number of " + unit);
  }
  constexpr double kLongest = 1e13;   // microseconds: about 115 days
  if (!(v * per_unit <= kLongest)) {  // also infinity
    invalid(name, value, "longer than " + number_text(kLongest / per_unit) + " " + unit);
  }
  if (v > 0 && v * per_unit < resolution) {
    invalid(name, value,
            "shorter than " + number_text(resolution / per_unit) + " " + unit +
                ", the shortest time it can hold" + (zero_allowed ? " (0 means off)" : ""));
  }
  return std::chrono::microseconds(static_cast<long long>(v * per_unit));
}

// Seconds, held in whole milliseconds.
std::chrono::milliseconds parse_seconds(const char* name, const std::string& value,
                                        bool zero_allowed = false) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      parse_duration(name, value, "seconds", 1e6, 1e3, zero_allowed));
}

std::string decode_hex(const char* name, const std::string& value) {
  if (value.size() != 64) invalid(name, "<hidden>", "expected 64 hex characters");
  std::string out;
  for (size_t i = 0; i < value.size(); i += 2) {
    char* end = nullptr;
    std::string byte = value.substr(i, 2);
    long v = std::strtol(byte.c_str(), &end, 16);
    if (*end != '\0') invalid(name, "<hidden>", "expected 64 hex characters");
    out.push_back(static_cast<char>(v));
  }
  return out;
}

Config::Launcher detect_launcher(const Config::Getenv& getenv) {
  if (getenv(env::kRank) || getenv(env::kWorkerId)) return Config::Launcher::kCohortrun;
  if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK")) return Config::Launcher::kMpirun;
  return Config::Launcher::kNone;
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

void read_rendezvous(const Config::Getenv& getenv, Config& c, const char* because) {
  c.rendezvous_addr = required(getenv, env::kRendezvousAddr, because);
  c.rendezvous_port = static_cast<int>(
      parse_integer(env::kRendezvousPort, required(getenv, env::kRendezvousPort, because), 1,
                    std::numeric_limits<uint16_t>::max()));
  c.secret = decode_hex(env::kSecret, required(getenv, env::kSecret, because));
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
  count = static_cast<int>(parse_integer(count_name, *getenv(count_name), 1, c.size));
  index = static_cast<int>(parse_integer(index_name, *getenv(index_name), 0, c.size - 1));
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
  read_index_pair(getenv, c, env::kLocalRank, env::kLocalSize, c.local_rank, c.local_size);
  read_index_pair(getenv, c, env::kCrossRank, env::kCrossSize, c.cross_rank, c.cross_size);
}

void read_cohortrun_placement(const Config::Getenv& getenv, Config& c) {
  if (getenv(env::kWorkerId)) return read_elastic_worker(getenv, c);
  c.size = static_cast<int>(
      parse_integer(env::kSize, required(getenv, env::kSize, env::kRank), 1, 1 << 20));
  c.rank = static_cast<int>(
      parse_integer(env::kRank, required(getenv, env::kRank, env::kRank), 0, c.size - 1));
  if (c.size > 1) read_rendezvous(getenv, c, env::kRank);
  if (auto host = getenv(env::kHostname)) c.hostname = *host;
  read_placement(getenv, c);
}

}  // namespace

std::string_view to_string(Config::CpuOperations ops) {
  return ops == Config::CpuOperations::kGloo ? "gloo" : "mpi";
}

Config Config::from(const Getenv& getenv) {
  Config c;
  c.launcher = detect_launcher(getenv);
  c.cpu_operations = c.launcher == Launcher::kMpirun ? CpuOperations::kMpi : CpuOperations::kGloo;
  if (auto ops = getenv("COHORT_CPU_OPERATIONS")) {
    if (*ops == "gloo") {
      c.cpu_operations = CpuOperations::kGloo;
    } else if (*ops == "mpi") {
      c.cpu_operations = CpuOperations::kMpi;
    } else {
      invalid("COHORT_CPU_OPERATIONS", *ops, "expected 'gloo' or 'mpi'");
    }
  }
  if (c.cpu_operations == CpuOperations::kMpi && c.launcher != Launcher::kMpirun) {
    invalid("COHORT_CPU_OPERATIONS", "mpi", "the MPI backend needs a job started by mpirun");
  }
  if (c.launcher == Launcher::kCohortrun) read_cohortrun_placement(getenv, c);
  if (c.launcher == Launcher::kMpirun) {
    // Gloo under mpirun listens on this host's name (set COHORT_HOSTNAME to choose an address).
    c.hostname = getenv(env::kHostname).value_or(net::local_host_name());
  }
  if (auto name = getenv(env::kNetworkInterface)) c.hostname = interface_address(*name);
  if (auto v = getenv("COHORT_TIMEOUT_SECONDS")) {
    c.timeout = parse_seconds("COHORT_TIMEOUT_SECONDS", *v);
  }
  if (auto v = getenv("COHORT_ELASTIC_TIMEOUT_SECONDS")) {
    c.elastic_timeout = parse_seconds("COHORT_ELASTIC_TIMEOUT_SECONDS", *v);
  }
  if (auto v = getenv("COHORT_SHUTDOWN_TIMEOUT_SECONDS")) {
    c.shutdown_timeout = parse_seconds("COHORT_SHUTDOWN_TIMEOUT_SECONDS", *v);
  }
  if (auto v = getenv("COHORT_PEER_TIMEOUT_SECONDS")) {
    c.peer_timeout = parse_duration("COHORT_PEER_TIMEOUT_SECONDS", *v, "seconds", 1e6, 1);
  }
  if (auto v = getenv("COHORT_STALL_CHECK_TIME_SECONDS")) {
    c.stall_check_time = parse_seconds("COHORT_STALL_CHECK_TIME_SECONDS", *v);
  }
  if (auto v = getenv("COHORT_STALL_CHECK_DISABLE")) {
    c.stall_check = parse_integer("COHORT_STALL_CHECK_DISABLE", *v, 0, 1) == 0;
  }
  if (auto v = getenv("COHORT_STALL_SHUTDOWN_TIME_SECONDS")) {
    // 0 is allowed here: it means never.
    c.stall_shutdown_time = parse_seconds("COHORT_STALL_SHUTDOWN_TIME_SECONDS", *v, true);
  }
  if (auto v = getenv("COHORT_TIMELINE")) c.timeline_path = *v;
  if (auto v = getenv("COHORT_FUSION_THRESHOLD")) {
    c.fusion_threshold =
        static_cast<size_t>(parse_integer("COHORT_FUSION_THRESHOLD", *v, 0, int64_t{1} << 40));
  }
  if (auto v = getenv("COHORT_CACHE_CAPACITY")) {
    c.cache_capacity =
        static_cast<size_t>(parse_integer("COHORT_CACHE_CAPACITY", *v, 0, int64_t{1} << 24));
  }
  if (auto v = getenv("COHORT_CYCLE_TIME")) {
    c.cycle_time = parse_duration("COHORT_CYCLE_TIME", *v, "milliseconds", 1000, 1, true);
  }
  if (auto v = getenv("COHORT_LOG_LEVEL")) {
    try {
      c.log_level = log::parse_level(*v);
    } catch (const InvalidArgument& e) {
      invalid("COHORT_LOG_LEVEL", *v, e.what());
    }
  }
  if (auto v = getenv("COHORT_FAULT_KILL_AT")) {
    try {
      c.fault_kill_at = parse_fault_point(*v);
    } catch (const InvalidArgument& e) {
      invalid("COHORT_FAULT_KILL_AT", *v, e.what());
    }
  }
  return c;
}

Config Config::from_environment() {
  return from([](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
}

}  // namespace cohort
