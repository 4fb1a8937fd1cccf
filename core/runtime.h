// The one object that holds all of a process's Cohort state: the data-plane backend, the control
// channel, the queue of submitted tensors and the background thread that negotiates and runs
// them. Destroying it and building a new one is how the process leaves and rejoins a job.
//
// One collective, top down, in the files that handle it:
//   core/api.cc                 cohort::allreduce() and the others check their arguments and
//                               call Runtime::submit (core/runtime.cc).
//   core/tensor_queue.cc        the entry waits under its name; the background thread
//                               (Runtime::background_loop) collects its request.
//   core/coordinator.cc         rank 0 negotiates every rank's requests (core/negotiator.cc),
//                               which the other ranks send from core/worker.cc, as ids where the
//                               response cache (core/response_cache.cc) knows them.
//   core/fusion.cc              ready allreduces are fused into fewer responses.
//   core/executor.cc            every rank runs the response list in the order rank 0 sent
//                               (core/executor_allreduce.cc for allreduce) ...
//   core/handle.cc              ... and completes the entry's handle.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "base/cancellation.h"
#include "base/mutex.h"
#include "base/placement.h"
#include "cohort/handle.h"
#include "core/config.h"
#include "core/control_channel.h"
#include "core/default_names.h"
#include "core/executor.h"
#include "core/fault_injection.h"
#include "core/heartbeat.h"
#include "core/role.h"
#include "core/tensor_queue.h"
#include "core/timeline.h"
#include "ops/backend.h"

namespace cohort {

// How a Runtime joins its world; the defaults are a static job's.
struct Formation {
  // Namespaces the Gloo rendezvous keys on cohortrun's server (an elastic round's scope, so a
  // round never reads a previous round's addresses).
  std::string rendezvous_scope;
  // The elastic entry being joined, for COHORT_FAULT_KILL_AT; -1 (no fault points) otherwise.
  int entry = -1;
  // Abandons the joining at once, wherever it waits, with InternalError carrying its reason.
  const Cancellation* cancel = nullptr;
};

// What a layer above core keeps with a Runtime and drops with it (elastic/session.h).
class RuntimeAttachment {
 public:
  virtual ~RuntimeAttachment() = default;
};

class Runtime {
 public:
  // Joins the job that `config` describes, as `formation` says; returns once every rank is
  // connected.
  explicit Runtime(const Config& config, Formation formation = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const Placement& topology() const { return topology_; }
  // COHORT_FAULT_KILL_AT at `phase` of this elastic worker's round entry (core/fault_injection.h).
  void fault_point(std::string_view phase) const;
  // Names for collectives submitted without one (cohort::default_name).
  DefaultNames& default_names() { return default_names_; }
  std::string_view backend_name() const { return backend_name_; }
  const Config& config() const { return config_; }
  // Set by the layer that built this Runtime (elastic mode), before the Runtime is shared.
  void attach(std::shared_ptr<RuntimeAttachment> attachment) {
    attachment_ = std::move(attachment);
  }
  RuntimeAttachment* attachment() const { return attachment_.get(); }

  // Queues a validated entry for negotiation; the handle completes when every rank has run it.
  Handle submit(Request request, Tensor input, Tensor output);
  // The same for an entry of several tensors (a grouped allreduce); its handle is set here.
  Handle submit(TensorEntry entry);
  // The global ranks of a process set; throws InvalidArgument if it does not exist.
  std::vector<int> process_set_ranks(int id) const;

  // True once this runtime can run nothing more for the world: its background thread has ended
  // (a failure, or every rank shut down), or a collective failed here because a rank it needed
  // has shut down. init() then replaces it (core/api.cc).
  bool defunct() const;
  // Waits (bounded by the shutdown timeout) until every rank has shut down, then stops.
  void shutdown();
  // Leaves without the collective shutdown, for a world that is broken or being replaced: fails
  // everything pending and later with InternalError(reason), closes every connection (so peers
  // learn at once) and joins the background thread. Waits for no peer; at most for a collective
  // already running on the background thread, which is bounded by the timeouts.
  void abandon(const std::string& reason);

 private:
  void connect_control_channel();
  // Ranks all on one host: the control channel's messages through shared memory.
  void share_control_rings();
  // A TCP star between rank 0 and every rank, rank 0's address published over the backend.
  ControlChannel connect_star(const std::string& label);
  // Host leaders (COHORT_CONTROL_LEADERS, core/leader.h): each rank's control connection to its
  // host's leader, and the leaders' to rank 0; the leaders' addresses published over the backend.
  // `hosts`: every rank's host (host_names()).
  void connect_control_leaders(const std::vector<std::string>& hosts);
  // Publishes this rank's `block` (under kAddressBlock bytes) and returns every rank's.
  std::vector<std::string> allgather_strings(const std::string& block);
  // The heartbeat thread found the job failed: interrupt the data plane, wake the background
  // thread. Runs on the heartbeat thread.
  void on_peer_failure(const std::string& verdict);
  // What to report for a failure seen here as `local` (a closed connection is often the echo of
  // a failure elsewhere): the heartbeat's verdict if one comes soon, else `local`.
  std::string diagnose(const std::string& local);
  void check_process_set(const Request& request) const;
  void compute_topology();
  // Rank 0 coordinates, the others follow; once executor_ exists.
  std::unique_ptr<Role> make_role();

  using Clock = std::chrono::steady_clock;

  void background_loop();
  // When the requests waiting in the queue are to be collected (see Config::cycle_time).
  std::optional<Clock::time_point> collect_time();
  // The queue's new requests if their collection time has come, else none.
  std::vector<Request> collect_if_due();
  std::chrono::microseconds wait_timeout();
  // Fails everything pending and later with InternalError(reason) and closes all connections.
  void fail(const std::string& reason);
  void finish(std::exception_ptr error);
  void tear_down_connections();

  const Config config_;
  const Cancellation* formation_ = nullptr;  // during the constructor only
  int entry_ = -1;                           // Formation::entry
  // How often each phase of kFaultPhases was reached in this entry (COHORT_FAULT_KILL_AT's #N).
  mutable std::array<std::atomic<int>, std::size(kFaultPhases)> fault_hits_{};
  std::shared_ptr<RuntimeAttachment> attachment_;
  // Until the executor takes it over: builds the topology and the control channel.
  std::unique_ptr<ops::Backend> backend_;
  std::string backend_name_;
  Placement topology_;
  std::vector<int> leader_of_;  // with host leaders: each rank's host leader; else empty
  // Rank 0 with leaders: how its control and heartbeat connections name the other leaders ("rank
  // 8, the leader of host H (ranks 8 to 15)").
  std::vector<std::pair<int, std::string>> leader_names_;
  DefaultNames default_names_;
  ControlChannel control_;
  TensorQueue queue_;
  // Rank 0's, when COHORT_TIMELINE is set: the coordinator records the negotiation in it, the
  // executor the execution. Opened while joining, so that a bad path stops the job on every rank.
  Timeline timeline_;
  // Rank 0, while it joins: why the job cannot start (an unwritable COHORT_TIMELINE), published to
  // every rank in place of the control address (connect_star), so that each fails with the cause.
  std::string refusal_;
  std::optional<Executor> executor_;  // background thread only, but for members(), abort()
  // Rank 0's coordinator or another rank's worker (core/role.h); background thread only, after
  // the constructor.
  std::unique_ptr<Role> role_;
  std::optional<Heartbeat> heartbeat_;  // worlds of more than one rank; stopped before executor_

  std::atomic<bool> shutdown_requested_{false};
  std::atomic<bool> abort_{false};
  std::atomic<bool> abandoned_{false};  // a failure seen while abandoning is expected, not news
  mutable Mutex finished_mutex_;
  CondVar finished_cv_;
  bool finished_ GUARDED_BY(finished_mutex_) = false;
  std::thread thread_;
};

}  // namespace cohort
