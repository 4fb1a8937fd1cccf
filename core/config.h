// Every COHORT_* setting, read from the environment in one place, validated once at init(). The
// tunables are rows of core/config_table.h; docs/environment.md lists each with its default.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/launch_env.h"
#include "base/log.h"
#include "base/placement.h"
#include "core/fault_injection.h"
#include "ops/device_backend.h"

namespace cohort {

struct Config {
  using Launcher = env::Launcher;
  enum class CpuOperations { kGloo, kMpi };
  enum class Hierarchy { kAuto, kOn, kOff };

  Launcher launcher = Launcher::kNone;
  CpuOperations cpu_operations = CpuOperations::kGloo;

  // From cohortrun (absent for mpirun, whose ranks come from MPI itself). The local and cross
  // fields are the launcher's view of hosts (COHORT_LOCAL_*, COHORT_CROSS_*) only where
  // `hosts_placed`; otherwise the runtime works them out from every rank's host name.
  Placement placement;
  bool hosts_placed = false;
  std::string hostname = "127.0.0.1";
  // The job's store: the launcher's rendezvous server, or etcd where `etcd_endpoints` is set
  // (core/job_store.h).
  std::string rendezvous_addr;
  int rendezvous_port = 0;
  std::vector<std::string> etcd_endpoints;
  std::string etcd_prefix;
  std::string etcd_ca_file;
  std::string etcd_cert_file;
  std::string etcd_key_file;
  std::string secret;  // raw bytes, decoded from COHORT_SECRET's hex
  // COHORT_WORKER_ID: set by cohortrun's elastic mode instead of the rank and size, which come
  // from the launcher's assignment for each round. Empty outside elastic mode.
  std::string worker_id;
  bool elastic() const { return !worker_id.empty(); }
  // COHORT_ELASTIC_TIMEOUT_SECONDS: how long an elastic worker waits for its assignment.
  std::chrono::milliseconds elastic_timeout{600'000};

  // COHORT_TIMEOUT_SECONDS: bounds rendezvous, connection set-up and every wait on a peer.
  std::chrono::milliseconds timeout{30'000};
  // COHORT_SHUTDOWN_TIMEOUT_SECONDS: how long shutdown() waits for the other ranks to shut down.
  std::chrono::milliseconds shutdown_timeout{60'000};
  // COHORT_PEER_TIMEOUT_SECONDS: a rank that sends no heartbeat for this long is taken for frozen
  // or cut off and the job fails on every rank. Heartbeats flow every quarter of it, also while a
  // collective runs, so a collective may legitimately take longer than this.
  std::chrono::microseconds peer_timeout{5'000'000};
  // Where only one of the two timeouts was set and it broke timeout > peer_timeout, the other
  // was fitted to it (base/peer_timeouts.h): the warning saying so, which init() logs.
  std::optional<std::string> timeouts_fitted;
  // COHORT_STALL_CHECK_TIME_SECONDS: rank 0 warns about collectives that some ranks submitted and
  // others have not for this long. COHORT_STALL_CHECK_DISABLE=1 turns the warning off.
  std::chrono::milliseconds stall_check_time{60'000};
  bool stall_check = true;
  // COHORT_STALL_SHUTDOWN_TIME_SECONDS: after this long such a collective fails on every rank
  // with StallError; 0 (the default) means never.
  std::chrono::milliseconds stall_shutdown_time{0};
  // COHORT_FUSION_THRESHOLD: ready allreduces of one kind are packed into one buffer of up to this
  // many bytes and reduced together; 0 turns fusion off.
  size_t fusion_threshold = size_t{128} << 20;
  // COHORT_CACHE_CAPACITY: how many negotiated tensors the response cache remembers, so that
  // later submissions of the same name and parameters travel as an id; 0 turns it off.
  size_t cache_capacity = 1024;
  // COHORT_CYCLE_TIME (milliseconds): how long the background thread lets submissions accumulate
  // before it sends them for negotiation, so that a burst is negotiated and fused as one. It
  // collects once no request has arrived for a tenth of this time, and at the latest this long
  // after the first one. 0 sends every request as soon as the thread wakes.
  std::chrono::microseconds cycle_time{1000};
  // COHORT_SHARED_MEMORY_DISABLE=1: ranks that share a host talk through Gloo over loopback
  // instead of a shared-memory segment (ops/shm_backend.h).
  bool shared_memory = true;
  // COHORT_CONTROL_SPIN_MICROSECONDS: where every rank is on one host (and has a core of its
  // own), how long the background thread looks for a control message in shared memory before
  // it sleeps (pausing while its spins keep missing: base/spin_policy.h); 0 sleeps at once.
  std::chrono::microseconds control_spin{50};
  // COHORT_CONTROL_LEADERS: 1 makes the control plane hierarchical: each host's lowest rank leads
  // its host, the host's other ranks send their requests through it, and only the leaders talk
  // to rank 0 (core/leader.h); 0 keeps the star. Automatic (the default): leaders where the world
  // spans several hosts and some host has several ranks (leaders_wanted, core/leader.h).
  Hierarchy control_leaders = Hierarchy::kAuto;
  // COHORT_HIERARCHICAL: in a Gloo world over several hosts, allreduce, broadcast, allgather and
  // reducescatter within each host through shared memory and across hosts among one rank per host
  // (ops/hierarchical_backend.h). Automatic: where some host has several ranks.
  Hierarchy hierarchical = Hierarchy::kAuto;
  // COHORT_SHARED_MEMORY_SLOT_BYTES: how much of each rank's data one shared-memory step moves,
  // rounded up to a multiple of 4096; the segment holds 2 * (local ranks + 1) slots.
  size_t shared_memory_slot_bytes = size_t{1} << 20;
  // COHORT_DEVICE_OPERATIONS: how collectives on CUDA tensors run: auto (NCCL where every rank of
  // the process set has a GPU of its own and this build has NCCL, the staged backend otherwise),
  // nccl or staged (ops/device_backend.h).
  ops::DeviceOperations device_operations = ops::DeviceOperations::kAuto;
  // COHORT_STAGED_CHUNK_BYTES: the staged backend's pipeline step (ops/staged_backend.h).
  size_t staged_chunk_bytes = size_t{4} << 20;
  // The two above as the device backend takes them.
  ops::DeviceOptions device_options() const { return {device_operations, staged_chunk_bytes}; }
  // How many other ranks keep a copy of each rank's range of a sharded State value.
  size_t state_replicas = 1;
  // COHORT_STATE_OVERLAP_DISABLE=1 clears it: commit() then waits for the replicas to arrive
  // instead of sending them while the next step runs (state/shard_sync.h).
  bool state_overlap = true;
  // COHORT_TIMELINE: where rank 0 writes a Chrome-trace timeline; empty = none.
  std::string timeline_path;
  log::Level log_level = log::Level::kWarning;
  // COHORT_FAULT_KILL_AT (tests and benchmarks only): see core/fault_injection.h.
  std::optional<FaultPoint> fault_kill_at;
  // COHORT_FAULT_CLOCK_SKEW_SECONDS (tests only): added to the timestamps of this process's
  // requests to cohortrun's rendezvous server, as if its clock were that far off.
  std::chrono::seconds fault_clock_skew{0};

  using Getenv = env::Getenv;
  // Throws InvalidArgument naming the variable for any invalid value.
  static Config from(const Getenv& getenv);
  static Config from_environment();
};

std::string_view to_string(Config::CpuOperations ops);

}  // namespace cohort
