#include "core/config_table.h"

#include "base/decimal.h"
#include "cohort/errors.h"

namespace cohort::config_table {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

Config::CpuOperations cpu_operations_named(std::string_view text) {
  if (text == "gloo") return Config::CpuOperations::kGloo;
  if (text == "mpi") return Config::CpuOperations::kMpi;
  throw InvalidArgument("expected 'gloo' or 'mpi'");
}

std::string cpu_operations_text(const Config::CpuOperations& ops) {
  return std::string(to_string(ops));
}

Config::Hierarchy hierarchy_named(std::string_view text) {
  if (text == "auto") return Config::Hierarchy::kAuto;
  if (text == "1") return Config::Hierarchy::kOn;
  if (text == "0") return Config::Hierarchy::kOff;
  throw InvalidArgument("expected 'auto', '1' or '0'");
}

std::string hierarchy_text(const Config::Hierarchy& h) {
  return h == Config::Hierarchy::kAuto ? "auto" : h == Config::Hierarchy::kOn ? "1" : "0";
}

ops::DeviceOperations device_operations_named(std::string_view text) {
  if (text == "auto") return ops::DeviceOperations::kAuto;
  if (text == "nccl") return ops::DeviceOperations::kNccl;
  if (text == "staged") return ops::DeviceOperations::kStaged;
  throw InvalidArgument("expected 'auto', 'nccl' or 'staged'");
}

std::string device_operations_text(const ops::DeviceOperations& ops) {
  return std::string(ops::to_string(ops));
}

std::string log_level_text(const log::Level& level) {
  for (const char* name : {"trace", "debug", "info", "warning", "error"}) {
    if (log::parse_level(name) == level) return name;
  }
  return "?";
}

std::optional<FaultPoint> fault_point(std::string_view text) {
  return parse_fault_point(text);
}

std::string fault_point_text(const std::optional<FaultPoint>& point) {
  if (!point) return "unset";
  std::string phase = point->phase;
  if (point->occurrence != 1) phase += "#" + std::to_string(point->occurrence);
  return (point->stop ? std::string(kStopPrefix) : "") + phase + ":" +
         std::to_string(point->entry) + ":" + point->worker_id;
}

// A whole number of seconds, negative too, at most 10 years either way.
std::chrono::seconds signed_seconds(std::string_view text) {
  constexpr int64_t kLimit = int64_t{10} * 366 * 24 * 3600;
  auto value = parse_decimal<int64_t>(text, -kLimit, kLimit);
  if (!value) {
    std::string hint = decimal_hint(text, -kLimit, kLimit);
    throw InvalidArgument("expected a whole number of seconds, from -" + std::to_string(kLimit) +
                          " to " + std::to_string(kLimit) +
                          (hint.empty() ? "" : " (" + hint + ")"));
  }
  return std::chrono::seconds(*value);
}

std::string seconds_text(const std::chrono::seconds& s) {
  return std::to_string(s.count());
}

// In the order of docs/environment.md. The doc lines are what `cohort_env_table` prints; the doc
// says the rest.
constexpr Setting kSettings[] = {
    {"COHORT_CPU_OPERATIONS",
     Parsed<Config::CpuOperations>{&Config::cpu_operations, cpu_operations_named,
                                   cpu_operations_text},
     "The data-plane backend for CPU tensors, gloo or mpi (mpi only under mpirun, where it is the "
     "default).",
     Scope::kAlike},
    {"COHORT_TIMEOUT_SECONDS",
     Duration<milliseconds>{&Config::timeout, env::kSecondsInMilliseconds},
     "Bounds the rendezvous, connection set-up and every wait on a peer."},
    {"COHORT_PEER_TIMEOUT_SECONDS",
     Duration<microseconds>{&Config::peer_timeout, env::kSecondsInMicroseconds},
     "A rank that sends no heartbeat for this long fails the job on every rank.", Scope::kAlike},
    {"COHORT_SHUTDOWN_TIMEOUT_SECONDS",
     Duration<milliseconds>{&Config::shutdown_timeout, env::kSecondsInMilliseconds},
     "How long shutdown() waits for the other ranks to shut down."},
    {"COHORT_STALL_CHECK_TIME_SECONDS",
     Duration<milliseconds>{&Config::stall_check_time, env::kSecondsInMilliseconds},
     "Rank 0 warns about collectives some ranks submitted and others have not for this long."},
    {"COHORT_STALL_CHECK_DISABLE", Disable{&Config::stall_check},
     "1 turns the stall warnings off."},
    {"COHORT_STALL_SHUTDOWN_TIME_SECONDS",
     Duration<milliseconds>{&Config::stall_shutdown_time, env::kSecondsInMillisecondsOrZero},
     "After this long a stalled collective fails with StallError on every rank; 0 means never."},
    {"COHORT_FUSION_THRESHOLD", Count{&Config::fusion_threshold, 0, int64_t{1} << 40},
     "Ready allreduces of one kind are fused into buffers of up to this many bytes; 0 turns "
     "fusion off."},
    {"COHORT_CACHE_CAPACITY", Count{&Config::cache_capacity, 0, int64_t{1} << 24},
     "How many negotiated tensors the response cache remembers; 0 turns it off."},
    {"COHORT_CYCLE_TIME",
     Duration<microseconds>{&Config::cycle_time, env::kMillisecondsInMicrosecondsOrZero},
     "Milliseconds the background thread lets submissions accumulate before negotiating them."},
    {"COHORT_SHARED_MEMORY_DISABLE", Disable{&Config::shared_memory},
     "1: ranks on one host talk through Gloo over loopback instead of shared memory.",
     Scope::kAlike},
    {"COHORT_CONTROL_SPIN_MICROSECONDS",
     Duration<microseconds>{&Config::control_spin, env::kMicrosecondsOrZero},
     "Ranks on one host: how long the background thread spins for a message before sleeping."},
    {"COHORT_CONTROL_LEADERS",
     Parsed<Config::Hierarchy>{&Config::control_leaders, hierarchy_named, hierarchy_text},
     "auto, 1 or 0: each host's ranks reach rank 0 through their host's leader (its lowest rank).",
     Scope::kAlike},
    {"COHORT_HIERARCHICAL",
     Parsed<Config::Hierarchy>{&Config::hierarchical, hierarchy_named, hierarchy_text},
     "auto, 1 or 0: collectives within hosts through shared memory, then across hosts.",
     Scope::kAlike},
    {"COHORT_SHARED_MEMORY_SLOT_BYTES",
     Count{&Config::shared_memory_slot_bytes, 4096, int64_t{1} << 30},
     "How much of each rank's data one shared-memory step moves (rounded up to 4 KiB).",
     Scope::kAlike},
    {"COHORT_DEVICE_OPERATIONS",
     Parsed<ops::DeviceOperations>{&Config::device_operations, device_operations_named,
                                   device_operations_text},
     "auto, nccl or staged: how collectives on CUDA tensors run.", Scope::kAlike},
    {"COHORT_STAGED_CHUNK_BYTES", Count{&Config::staged_chunk_bytes, 8, int64_t{1} << 30},
     "The staged device backend's pipeline step: bytes copied to the host per chunk.",
     Scope::kAlike},
    {"COHORT_STATE_REPLICAS", Count{&Config::state_replicas, 0, 1024},
     "How many other ranks keep a copy of each rank's range of a sharded State value (fewer than "
     "the world size).",
     Scope::kAlike},
    {"COHORT_STATE_OVERLAP_DISABLE", Disable{&Config::state_overlap},
     "1: commit() waits for a sharded value's replicas instead of sending them during the next "
     "step.",
     Scope::kAlike},
    {"COHORT_TIMELINE", Text{&Config::timeline_path},
     "A file where rank 0 writes a Chrome-trace timeline."},
    {"COHORT_ELASTIC_TIMEOUT_SECONDS",
     Duration<milliseconds>{&Config::elastic_timeout, env::kSecondsInMilliseconds},
     "How long an elastic worker waits for the launcher's assignment."},
    {"COHORT_LOG_LEVEL", Parsed<log::Level>{&Config::log_level, log::parse_level, log_level_text},
     "trace, debug, info, warning or error."},
    {"COHORT_FAULT_KILL_AT",
     Parsed<std::optional<FaultPoint>>{&Config::fault_kill_at, fault_point, fault_point_text},
     "Tests and benchmarks only: [stop:]PHASE:ENTRY:WORKER, where that worker kills (or stops) "
     "itself."},
    {"COHORT_FAULT_CLOCK_SKEW_SECONDS",
     Parsed<std::chrono::seconds>{&Config::fault_clock_skew, signed_seconds, seconds_text},
     "Tests only: seconds added to the timestamps of this worker's rendezvous requests."},
};

template <class Rep>
void read(const char* name, const std::string& value, const Duration<Rep>& f, Config& c) {
  c.*f.member = std::chrono::duration_cast<Rep>(env::parse_duration(name, value, f.rule));
}

void read(const char* name, const std::string& value, const Count& f, Config& c) {
  c.*f.member = static_cast<size_t>(env::parse_integer(name, value, f.lo, f.hi));
}

void read(const char* name, const std::string& value, const Disable& f, Config& c) {
  c.*f.enabled = env::parse_integer(name, value, 0, 1) == 0;
}

void read(const char* name, const std::string& value, const Enable& f, Config& c) {
  c.*f.enabled = env::parse_integer(name, value, 0, 1) == 1;
}

void read(const char*, const std::string& value, const Text& f, Config& c) {
  c.*f.member = value;
}

template <class T>
void read(const char* name, const std::string& value, const Parsed<T>& f, Config& c) {
  try {
    c.*f.member = f.parse(value);
  } catch (const InvalidArgument& e) {
    env::invalid(name, value, e.what());
  }
}

template <class Rep>
std::string write(const Duration<Rep>& f, const Config& c) {
  return env::duration_text(c.*f.member, f.rule);
}

std::string write(const Count& f, const Config& c) {
  return std::to_string(c.*f.member);
}

std::string write(const Disable& f, const Config& c) {
  return c.*f.enabled ? "0" : "1";
}

std::string write(const Enable& f, const Config& c) {
  return c.*f.enabled ? "1" : "0";
}

std::string write(const Text& f, const Config& c) {
  return (c.*f.member).empty() ? "unset" : c.*f.member;
}

template <class T>
std::string write(const Parsed<T>& f, const Config& c) {
  return f.show(c.*f.member);
}

}  // namespace

std::span<const Setting> settings() {
  return kSettings;
}

void apply(const Setting& setting, const std::string& value, Config& config) {
  std::visit([&](const auto& field) { read(setting.name, value, field, config); }, setting.field);
}

std::string show(const Setting& setting, const Config& config) {
  return std::visit([&](const auto& field) { return write(field, config); }, setting.field);
}

}  // namespace cohort::config_table
