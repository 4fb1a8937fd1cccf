// The one object that holds all of a process's Cohort state: the data-plane backend, the control
// channel, the queue of submitted tensors and the background thread that negotiates and runs
// them. Destroying it and building a new one is how the process leaves and rejoins a job.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "cohort/handle.h"
#include "core/config.h"
#include "core/control_channel.h"
#include "core/negotiator.h"
#include "core/tensor_queue.h"
#include "core/timeline.h"
#include "core/topology.h"
#include "ops/backend.h"

namespace cohort {

class Runtime {
 public:
  // Joins the job that `config` describes; returns once every rank is connected.
  explicit Runtime(const Config& config);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const Topology& topology() const { return topology_; }
  std::string_view backend_name() const { return backend_name_; }

  // Queues a validated entry for negotiation; the handle completes when every rank has run it.
  Handle submit(Request request, Tensor input, Tensor output);

  // Waits (bounded by the shutdown timeout) until every rank has shut down, then stops.
  void shutdown();

 private:
  void connect_control_channel();
  void compute_topology();

  using Clock = std::chrono::steady_clock;

  void background_loop();
  // When the requests waiting in the queue are to be collected (see Config::cycle_time).
  std::optional<Clock::time_point> collect_time();
  // The queue's new requests if their collection time has come, else none.
  std::vector<Request> collect_if_due();
  void coordinator_step(std::vector<ControlMessage> messages, std::vector<Request> fresh);
  void inspect_stalls(std::vector<Response>& responses);
  void negotiate(int rank, Request request);
  std::chrono::microseconds wait_timeout();
  void worker_step(std::vector<ControlMessage> messages, std::vector<Request> fresh);
  void execute(const ResponseList& list);
  void execute(const Response& response);
  void run_collective(const Response& response, TensorEntry& entry);
  void run_fused_allreduce(const Response& response);
  // A response to execute names only tensors this rank submitted; anything else is a broken peer.
  static void check_submitted(const TensorEntry& entry, const std::string& name);
  // Prescale, reduce, postscale (and average) `count` elements in place.
  void reduce_in_place(void* data, size_t count, const Request& request,
                       const ops::BufferBinding& binding);
  void finish(std::exception_ptr error);
  // Fails everything pending and later with InternalError(reason) and closes all connections.
  void fail(const std::string& reason);
  void announce_abort(const std::string& reason);
  void tear_down_connections();

  const Config config_;
  std::unique_ptr<ops::Backend> backend_;  // background thread only, once it runs
  std::string backend_name_;
  Topology topology_;
  ControlChannel control_;
  TensorQueue queue_;
  std::optional<Negotiator> negotiator_;  // rank 0 only
  Timeline timeline_;                     // rank 0 only, when COHORT_TIMELINE is set

  std::atomic<bool> shutdown_requested_{false};
  std::atomic<bool> abort_{false};
  bool shutdown_announced_ = false;                         // background thread only
  std::chrono::steady_clock::time_point next_stall_check_;  // rank 0's background thread only
  // Where fused allreduces are packed (background thread only). It only grows, by the same steps
  // on every rank, so whether it moved is the same everywhere (see ops::BufferBinding).
  std::vector<std::byte> fusion_buffer_;
  int fusion_generation_ =
      0;  // counts the buffer's moves: algorithms bound to an old one are stale

  std::mutex finished_mutex_;
  std::condition_variable finished_cv_;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace cohort
