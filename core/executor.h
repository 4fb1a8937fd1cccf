// The execution half of the engine: runs the collectives rank 0 scheduled, in the order given, on
// this rank. For each response it takes the named entries from the queue, moves the data through
// the backend of the response's process set (packing fused allreduces into that set's fusion
// buffer) and completes the handles. Used by the background thread only, except members().
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/mutex.h"
#include "core/request.h"
#include "core/tensor_queue.h"
#include "core/timeline.h"
#include "ops/backend.h"
#include "ops/device_backend.h"

namespace cohort {

class Executor {
 public:
  // Given what a communication failure looks like here, what to report for it (the runtime may
  // know the cause, e.g. which peer died).
  using Diagnose = std::function<std::string(const std::string& local)>;

  // `world` is the backend over every rank (process set 0).
  // `before_first_run` runs once, as the first collective starts (a fault injection point).
  // `device` says how device backends are chosen and tuned (ops/device_backend.h).
  Executor(std::unique_ptr<ops::Backend> world, TensorQueue& queue, Timeline& timeline,
           std::chrono::milliseconds timeout, ops::DeviceOptions device, Diagnose diagnose = {},
           std::function<void()> before_first_run = {});

  // Runs a list's responses in order, as every rank does. Returns true when the list is the
  // last (every rank has asked to shut down), once every rank has run it.
  bool execute(const ResponseList& list);
  // Runs one response. Communication failures complete the handles concerned with
  // InternalError (its message diagnosed) and then throw it; any other error only completes the
  // handles.
  void execute(const Response& response);

  ops::Backend& world() { return *owned_sets().at(0).backend; }
  // This rank submitted join(): until the join completes, it contributes the operator's identity
  // to allreduces it never submitted.
  void mark_joined() { joined_ = true; }
  // Thread-safe: the global ranks of process set `id`, or nullopt if there is no such set.
  std::optional<std::vector<int>> members(int id) const;
  // Thread-safe: whether process set `id` existed and was removed.
  bool was_removed(int id) const;
  // Thread-safe: whether a collective failed here because a rank it needed has shut down.
  bool peer_shut_down() const { return peer_shut_down_; }
  // Closes every backend (after a failure, so that peers see closed connections at once).
  void close();
  // Thread-safe: interrupts every backend (ops::Backend::abort), so the collective running on the
  // background thread, if any, returns at once with InternalError.
  void abort(const std::string& reason);

 private:
  struct ProcessSetState {
    std::vector<int> members;               // global ranks, sorted
    std::unique_ptr<ops::Backend> backend;  // null where this rank is not a member
    // NCCL or staged over the same members for device tensors, made on first use (CUDA builds).
    std::unique_ptr<ops::DeviceBackend> device_backend;
    // Where this set's fused allreduces are packed. It only grows, by the same steps on every
    // member, so whether it moved is the same on all of them (see ops::BufferBinding).
    std::vector<std::byte> fusion_buffer;
    int generation = 0;  // counts the buffer's moves: algorithms bound to an old one are stale
  };

  std::atomic<bool> peer_shut_down_{false};

  bool is_member(int process_set) const;
  // The backend for tensors on `device` in `set`: the set's own, or its device backend.
  ops::Backend& backend_for(ProcessSetState& set, int device);
  // The set's device backend on CUDA device `device`, made on first use.
  ops::DeviceBackend& device_backend_for(ProcessSetState& set, int device);
  // Sizes the handle's output for `rows` rows of the entry's tensor, in host memory or on the
  // entry's device; returns where to write it.
  void* allocate_output(ProcessSetState& set, TensorEntry& entry, int64_t rows);
  ProcessSetState& member_set(int id);
  // The entries of `names`; a missing one is allowed only while this rank has joined.
  std::vector<TensorEntry> take_entries(const Response& response);
  void fail_all(const Response& response);
  // Allreduce (core/executor_allreduce.cc).
  struct ReducedTensor;
  void run_allreduce(const Response& response);
  void reduce_all(const Response& response, std::vector<TensorEntry>& entries);
  void reduce_alone(const Response& response, ProcessSetState& set, const ReducedTensor& tensor,
                    const Request& how);
  void reduce_on_device(ProcessSetState& set, const ReducedTensor& tensor, const Request& how,
                        const ops::BufferBinding& binding);
  void reduce_packed(ProcessSetState& set, std::span<const ReducedTensor> tensors,
                     const Request& how, bool moved);
  bool grow_fusion_buffer(ProcessSetState& set, const std::vector<Response::Batch>& batches,
                          const std::vector<ReducedTensor>& tensors);
  void run_single(const Response& response);
  void run_collective(const Response& response, TensorEntry& entry);
  void run_alltoall(const Response& response, ProcessSetState& set, TensorEntry& entry);
  void run_reducescatter(ProcessSetState& set, TensorEntry& entry);
  void reducescatter_on_device(ProcessSetState& set, const TensorEntry& entry,
                               std::span<const size_t> counts, void* output);
  static size_t row_bytes(const Request& req);
  // Whether a reduction averages or scales; on a device, all of that is one factor applied before
  // the sum (NCCL's PreMulSum): prescale × postscale, divided by the set's size for an average.
  static bool is_scaled(const Request& how);
  static double device_factor(const Request& how, size_t members);
  void finish_join(const Response& response);
  void add_process_set(const Response& response);
  void remove_process_set(const Response& response);
  // Whether `response` is this rank's business: a set's collectives concern its members only,
  // adding and removing sets every rank; failures in a removed set concern its former members.
  bool concerns_me(const Response& response) const;
  // Prescale, reduce, postscale (and average) `count` elements in place.
  void reduce_in_place(ProcessSetState& set, void* data, size_t count, const Request& request,
                       const ops::BufferBinding& binding, bool prescale = true);
  // Completes `entries` with the error being handled; rethrows it if it is an InternalError.
  void complete_with_current_error(std::vector<TensorEntry>& entries);

  TensorQueue& queue_;
  Timeline& timeline_;
  int rank_;
  std::chrono::milliseconds timeout_;
  ops::DeviceOptions device_options_;
  Diagnose diagnose_;
  std::function<void()> before_first_run_;
  bool joined_ = false;
  // A joined rank's contribution to a single allreduce; a prescaled copy of a reducescatter input.
  std::vector<std::byte> scratch_;
  // Guards sets_' keys, members and host backends against members() and abort().
  mutable Mutex sets_mutex_;
  std::map<int, ProcessSetState> sets_ GUARDED_BY(sets_mutex_);
  // Removed process sets: id -> whether this rank was a member.
  std::map<int, bool> removed_ GUARDED_BY(sets_mutex_);
  // sets_ and removed_ as the background thread reads them: it alone writes them (under
  // sets_mutex_), so it alone may read them without; other threads lock sets_mutex_.
  std::map<int, ProcessSetState>& owned_sets() NO_THREAD_SAFETY_ANALYSIS { return sets_; }
  const std::map<int, ProcessSetState>& owned_sets() const NO_THREAD_SAFETY_ANALYSIS {
    return sets_;
  }
  const std::map<int, bool>& owned_removed() const NO_THREAD_SAFETY_ANALYSIS { return removed_; }
};

}  // namespace cohort
