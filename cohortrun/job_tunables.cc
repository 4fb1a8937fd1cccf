#include "cohortrun/job_tunables.h"

#include <cstdlib>
#include <sstream>
#include <vector>

#include "cohort/errors.h"

namespace cohort::discovery {
namespace {

using Kind = JobTunable::Kind;

constexpr long long kTiB = 1LL << 40;

const JobTunable kTunables[] = {
    {.flag = "--fusion-threshold",
     .variable = "COHORT_FUSION_THRESHOLD",
     .kind = Kind::kCount,
     .lo = 0,
     .hi = kTiB,
     .value = "BYTES",
     .help = "fuse ready allreduces into buffers up to this size"},
    {.flag = "--cycle-time",
     .horovod = "--cycle-time-ms",
     .variable = "COHORT_CYCLE_TIME",
     .kind = Kind::kDuration,
     .rule = env::kMillisecondsInMicrosecondsOrZero,
     .value = "MS",
     .help = "how long submissions accumulate before negotiation"},
    {.flag = "--cache-capacity",
     .variable = "COHORT_CACHE_CAPACITY",
     .kind = Kind::kCount,
     .lo = 0,
     .hi = 1LL << 24,
     .value = "N",
     .help = "tensors the response cache remembers; 0: off"},
    {.flag = "--timeout-seconds",
     .variable = "COHORT_TIMEOUT_SECONDS",
     .kind = Kind::kDuration,
     .rule = env::kSecondsInMilliseconds,
     .value = "S",
     .help = "bound of every wait on a peer"},
    {.flag = "--peer-timeout-seconds",
     .variable = "COHORT_PEER_TIMEOUT_SECONDS",
     .kind = Kind::kDuration,
     .rule = env::kSecondsInMicroseconds,
     .value = "S",
     .help = "a rank silent this long fails the job"},
    {.flag = "--shutdown-timeout-seconds",
     .variable = "COHORT_SHUTDOWN_TIMEOUT_SECONDS",
     .kind = Kind::kDuration,
     .rule = env::kSecondsInMilliseconds,
     .value = "S",
     .help = "how long shutdown() waits for the other ranks"},
    {.flag = "--stall-check-time-seconds",
     .horovod = "--stall-check-warning-time-seconds",
     .variable = "COHORT_STALL_CHECK_TIME_SECONDS",
     .kind = Kind::kDuration,
     .rule = env::kSecondsInMilliseconds,
     .value = "S",
     .help = "warn about collectives stalled this long"},
    {.flag = "--stall-shutdown-time-seconds",
     .horovod = "--stall-check-shutdown-time-seconds",
     .variable = "COHORT_STALL_SHUTDOWN_TIME_SECONDS",
     .kind = Kind::kDuration,
     .rule = env::kSecondsInMillisecondsOrZero,
     .value = "S",
     .help = "fail collectives stalled this long; 0: never"},
    {.flag = "--worker-elastic-timeout-seconds",
     .variable = "COHORT_ELASTIC_TIMEOUT_SECONDS",
     .kind = Kind::kDuration,
     .rule = env::kSecondsInMilliseconds,
     .value = "S",
     .help = "how long an elastic worker waits for its next round's assignment"},
    {.flag = "--no-stall-check",
     .variable = "COHORT_STALL_CHECK_DISABLE",
     .kind = Kind::kSwitch,
     .help = "turn the stall warnings off"},
    {.flag = "--timeline-filename",
     .variable = "COHORT_TIMELINE",
     .kind = Kind::kText,
     .value = "FILE",
     .help = "rank 0 writes a Chrome-trace timeline there"},
    {.flag = "--cpu-operations",
     .variable = "COHORT_CPU_OPERATIONS",
     .kind = Kind::kChoice,
     .choices = "gloo mpi",
     .value = "gloo|mpi",
     .help = "the CPU data plane"},
    {.flag = "--hierarchical",
     .variable = "COHORT_HIERARCHICAL",
     .kind = Kind::kChoice,
     .choices = "auto 1 0",
     .value = "auto|1|0",
     .help = "collectives within hosts first"},
    {.flag = "--no-shared-memory",
     .variable = "COHORT_SHARED_MEMORY_DISABLE",
     .kind = Kind::kSwitch,
     .help = "ranks on one host talk over loopback TCP"},
    {.flag = "--shared-memory-slot-bytes",
     .variable = "COHORT_SHARED_MEMORY_SLOT_BYTES",
     .kind = Kind::kCount,
     .lo = 4096,
     .hi = 1LL << 30,
     .value = "BYTES",
     .help = "what one shared-memory step moves per rank"},
    {.flag = "--device-operations",
     .variable = "COHORT_DEVICE_OPERATIONS",
     .kind = Kind::kChoice,
     .choices = "auto nccl staged",
     .value = "auto|nccl|staged",
     .help = "how collectives on CUDA tensors run"},
    {.flag = "--staged-chunk-bytes",
     .variable = "COHORT_STAGED_CHUNK_BYTES",
     .kind = Kind::kCount,
     .lo = 8,
     .hi = 1LL << 30,
     .value = "BYTES",
     .help = "the staged device backend's pipeline step"},
    {.flag = "--state-replicas",
     .variable = "COHORT_STATE_REPLICAS",
     .kind = Kind::kCount,
     .lo = 0,
     .hi = 1024,
     .value = "N",
     .help = "copies of each rank's range of a sharded State value on other ranks"},
    {.flag = "--no-state-overlap",
     .variable = "COHORT_STATE_OVERLAP_DISABLE",
     .kind = Kind::kSwitch,
     .help =
         "a commit waits for its sharded replicas instead of sending them during the next step"},
    {.flag = "--control-spin-microseconds",
     .variable = "COHORT_CONTROL_SPIN_MICROSECONDS",
     .kind = Kind::kDuration,
     .rule = env::kMicrosecondsOrZero,
     .value = "US",
     .help = "how long the control thread spins before sleeping"},
    {.flag = "--control-leaders",
     .variable = "COHORT_CONTROL_LEADERS",
     .kind = Kind::kSwitch,
     .help = "each host's ranks reach rank 0 through their host's leader, on one host too"},
    {.flag = "--no-control-leaders",
     .variable = "COHORT_CONTROL_LEADERS",
     .kind = Kind::kSwitch,
     .given = "0",
     .help = "every rank reaches rank 0 directly, over several hosts too"},
};

std::vector<std::string> words(const char* text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string checked(const JobTunable& t, const std::string& text) {
  switch (t.kind) {
    case Kind::kDuration:
      env::parse_duration(t.variable, text, t.rule);
      return text;
    case Kind::kCount:
      env::parse_integer(t.variable, text, t.lo, t.hi);
      return text;
    case Kind::kChoice:
      for (const auto& choice : words(t.choices)) {
        if (text == choice) return text;
      }
      env::invalid(t.variable, text, "expected one of: " + std::string(t.choices));
    case Kind::kText:
      if (text.empty()) env::invalid(t.variable, text, "expected a value");
      return text;
    case Kind::kSwitch:
      return t.given;
  }
  return text;
}

}  // namespace

std::span<const JobTunable> job_tunables() {
  return kTunables;
}

std::string tunable_value(const JobTunable& tunable, const std::string& text) {
  try {
    return checked(tunable, text);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string(tunable.flag) + ": " + e.what());
  }
}

void apply_tunables(const std::map<std::string, std::string>& given) {
  std::vector<std::pair<const char*, std::string>> exports;
  std::map<std::string, const char*> flag_of;  // variable -> the flag that set it
  for (const auto& t : kTunables) {
    auto it = given.find(t.flag);
    if (it == given.end()) continue;
    std::string value = tunable_value(t, it->second);
    for (const auto& [variable, earlier] : exports) {
      if (variable == std::string(t.variable) && earlier != value) {
        throw InvalidArgument(std::string(flag_of[t.variable]) + " and " + t.flag +
                              " contradict each other (" + t.variable + "=" + earlier + " or " +
                              value + ")");
      }
    }
    flag_of[t.variable] = t.flag;
    exports.emplace_back(t.variable, value);
  }
  for (const auto& [name, value] : exports) ::setenv(name, value.c_str(), 1);
}

}  // namespace cohort::discovery
