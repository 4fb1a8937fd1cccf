#include "core/executor.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "base/log.h"
#include "cohort/errors.h"
#include "ops/device_backend.h"
#include "ops/reduce.h"

namespace cohort {
namespace {

void check_submitted(const TensorEntry& entry, const std::string& name) {
  if (!entry.handle) {
    throw InternalError("rank 0 scheduled '" + name + "', which this rank never submitted");
  }
}

int set_rank_of(const std::vector<int>& members, int global_rank) {
  auto it = std::lower_bound(members.begin(), members.end(), global_rank);
  if (it == members.end() || *it != global_rank) {
    throw InvalidArgument("rank " + std::to_string(global_rank) + " is not in the process set");
  }
  return static_cast<int>(it - members.begin());
}

// A small value (a rank, a process set id) handed back through the handle's output.
void set_scalar_output(TensorEntry& entry, int32_t value) {
  OwnedTensor& out = entry.handle->output;
  out.dtype = DataType::kInt32;
  out.shape = {1};
  out.bytes.resize(sizeof value);
  std::memcpy(out.bytes.data(), &value, sizeof value);
}

}  // namespace

bool Executor::is_scaled(const Request& how) {
  return how.reduce_op == ReduceOp::kAverage || how.prescale != 1.0 || how.postscale != 1.0;
}

double Executor::device_factor(const Request& how, size_t members) {
  double factor = how.prescale * how.postscale;
  return how.reduce_op == ReduceOp::kAverage ? factor / static_cast<double>(members) : factor;
}

Executor::Executor(std::unique_ptr<ops::Backend> world, TensorQueue& queue, Timeline& timeline,
                   std::chrono::milliseconds timeout, ops::DeviceOptions device, Diagnose diagnose,
                   std::function<void()> before_first_run)
    : queue_(queue),
      timeline_(timeline),
      rank_(world->rank()),
      timeout_(timeout),
      device_options_(device),
      diagnose_(std::move(diagnose)),
      before_first_run_(std::move(before_first_run)) {
  std::vector<int> everyone(world->size());
  std::iota(everyone.begin(), everyone.end(), 0);
  sets_[0] = ProcessSetState{.members = std::move(everyone), .backend = std::move(world)};
}

std::optional<std::vector<int>> Executor::members(int id) const {
  MutexLock lock(sets_mutex_);
  auto it = sets_.find(id);
  if (it == sets_.end()) return std::nullopt;
  return it->second.members;
}

void Executor::close() {
  MutexLock lock(sets_mutex_);
  // Sub-sets first: their connections were made after the world's.
  for (auto it = sets_.rbegin(); it != sets_.rend(); ++it) {
    try {
      it->second.device_backend.reset();
      it->second.backend.reset();
    } catch (const std::exception& e) {
      log::warning("closing a backend after a failure: ", e.what());
    }
  }
}

void Executor::abort(const std::string& reason) {
  MutexLock lock(sets_mutex_);
  // Device backends are made by the background thread outside the lock, and NCCL waits end at
  // their own timeout anyway: only the host backends are interrupted.
  for (auto& [id, set] : sets_) {
    if (set.backend) set.backend->abort(reason);
  }
}

bool Executor::was_removed(int id) const {
  MutexLock lock(sets_mutex_);
  return removed_.contains(id);
}

bool Executor::concerns_me(const Response& response) const {
  if (response.type == OpType::kAddProcessSet || response.type == OpType::kRemoveProcessSet) {
    return true;
  }
  if (is_member(response.process_set)) return true;
  auto removed = owned_removed().find(response.process_set);
  return response.kind != Response::Kind::kExecute && removed != owned_removed().end() &&
         removed->second;
}

bool Executor::is_member(int process_set) const {
  auto it = owned_sets().find(process_set);
  return it != owned_sets().end() && it->second.backend != nullptr;
}

ops::Backend& Executor::backend_for(ProcessSetState& set, int device) {
  if (device == kCpuDevice) return *set.backend;
  return device_backend_for(set, device);
}

ops::DeviceBackend& Executor::device_backend_for(ProcessSetState& set, int device) {
  if (set.device_backend && set.device_backend->device() != device) {
    throw InvalidArgument("device tensors of one process set must stay on one CUDA device (" +
                          std::to_string(set.device_backend->device()) + "), not move to " +
                          std::to_string(device));
  }
  if (!set.device_backend) {
    try {
      set.device_backend =
          ops::make_device_backend(*set.backend, device, timeout_, device_options_);
    } catch (const InternalError& e) {
      // Every member fails together here (the ranks agree on device readiness first), and the
      // host backend is intact: the collective fails, the runtime goes on.
      throw Error(std::string("no device backend for device tensors: ") + e.what());
    }
  }
  return *set.device_backend;
}

void* Executor::allocate_output(ProcessSetState& set, TensorEntry& entry, int64_t rows) {
  const Request& req = entry.request;
  OwnedTensor& result = entry.handle->output;
  result.dtype = req.dtype;
  result.shape = req.shape;
  result.shape[0] = rows;
  result.device = req.device;
  size_t bytes = static_cast<size_t>(rows) * row_bytes(req);
  if (req.device == kCpuDevice) {
    result.bytes.resize(bytes);
    return result.bytes.data();
  }
  result.device_memory = device_backend_for(set, req.device).allocate(bytes);
  return result.device_memory.get();
}

Executor::ProcessSetState& Executor::member_set(int id) {
  auto it = owned_sets().find(id);
  if (it == owned_sets().end() || !it->second.backend) {
    throw InternalError("rank 0 scheduled a collective on process set " + std::to_string(id) +
                        ", of which this rank is not a member");
  }
  return it->second;
}

bool Executor::execute(const ResponseList& list) {
  for (const auto& response : list.responses) execute(response);
  if (!list.shutdown) return false;
  // A rank that closed its connections while a peer still sends the tail of the last collective
  // would fail that peer: leave only once every rank is done.
  world().barrier();
  return true;
}

void Executor::execute(const Response& response) {
  // Every rank receives every response; an outsider may have a tensor of the same name in flight
  // elsewhere.
  if (!concerns_me(response)) return;
  if (response.kind != Response::Kind::kExecute) {
    fail_all(response);
    return;
  }
  if (before_first_run_) std::exchange(before_first_run_, nullptr)();
  switch (response.type) {
    case OpType::kAllreduce:
      return run_allreduce(response);
    case OpType::kJoin:
      return finish_join(response);
    case OpType::kAddProcessSet:
      return add_process_set(response);
    case OpType::kRemoveProcessSet:
      return remove_process_set(response);
    default:
      return run_single(response);
  }
}

void Executor::fail_all(const Response& response) {
  std::exception_ptr error;
  switch (response.kind) {
    case Response::Kind::kStalled:
      error = std::make_exception_ptr(StallError(response.error));
      break;
    case Response::Kind::kPeerLeft:
      peer_shut_down_ = true;
      error = std::make_exception_ptr(InternalError(response.error));
      break;
    default:
      error = std::make_exception_ptr(MismatchError(response.error));
  }
  // This rank had not submitted the name when the failure was decided: an entry of that name here
  // is a later submission (made after another rank saw the failure), which it must not take.
  if (std::find(response.not_submitted.begin(), response.not_submitted.end(), rank_) !=
      response.not_submitted.end()) {
    return;
  }
  for (const auto& name : response.names) {
    // Also sent for names this rank never submitted (another rank left, a stall): nothing to
    // fail here then.
    TensorEntry entry = queue_.take(name);
    if (entry.handle) entry.handle->complete(error);
  }
}

std::vector<TensorEntry> Executor::take_entries(const Response& response) {
  std::vector<TensorEntry> entries;
  for (const auto& name : response.names) entries.push_back(queue_.take(name));
  if (joined_) return entries;
  for (size_t i = 0; i < entries.size(); ++i) {
    try {
      check_submitted(entries[i], response.names[i]);
    } catch (const InternalError&) {
      // The entries taken with it are out of the queue: fail them here, or nobody would.
      complete_with_current_error(entries);
    }
  }
  return entries;
}

void Executor::complete_with_current_error(std::vector<TensorEntry>& entries) {
  auto error = std::current_exception();
  std::string what;
  try {
    throw;
  } catch (const InternalError& e) {
    what = diagnose_ ? diagnose_(e.what()) : e.what();
    error = std::make_exception_ptr(InternalError(what));
  } catch (const std::exception& e) {
    what = e.what();
  }
  for (auto& entry : entries) {
    if (!entry.handle) continue;
    timeline_.execution_ended(entry.request.name, what);
    entry.handle->complete(error);
  }
  try {
    throw;
  } catch (const InternalError&) {
    std::rethrow_exception(error);
  } catch (...) {
  }
}

void Executor::run_single(const Response& response) {
  const std::string& name = response.names.at(0);
  std::vector<TensorEntry> entries{queue_.take(name)};
  TensorEntry& entry = entries[0];
  check_submitted(entry, name);
  timeline_.execution_started(name, to_string(response.type), entry.output.num_bytes());
  try {
    run_collective(response, entry);
  } catch (...) {
    complete_with_current_error(entries);
    return;
  }
  timeline_.execution_ended(name, "ok");
  entry.handle->complete();
}

void Executor::run_collective(const Response& response, TensorEntry& entry) {
  const Request& req = entry.request;
  ProcessSetState& set = member_set(response.process_set);
  switch (response.type) {
    case OpType::kBroadcast:
      backend_for(set, req.device)
          .broadcast(entry.output.data, entry.output.num_bytes(),
                     set_rank_of(set.members, req.root));
      return;
    case OpType::kAllgather: {
      size_t row = row_bytes(req);
      std::vector<size_t> counts;
      int64_t rows = 0;
      for (int64_t d : response.first_dims) {
        counts.push_back(static_cast<size_t>(d) * row);
        rows += d;
      }
      void* output = allocate_output(set, entry, rows);
      backend_for(set, req.device).allgatherv(entry.input.data, output, counts);
      return;
    }
    case OpType::kBarrier:
      set.backend->barrier();
      return;
    case OpType::kAlltoall:
      return run_alltoall(response, set, entry);
    case OpType::kReducescatter:
      return run_reducescatter(set, entry);
    default:
      throw InternalError("rank 0 scheduled " + std::string(to_string(response.type)) + " '" +
                          req.name + "', which this engine cannot run");
  }
}

size_t Executor::row_bytes(const Request& req) {
  Shape row(req.shape.begin() + 1, req.shape.end());
  return static_cast<size_t>(num_elements(row)) * element_size(req.dtype);
}

void Executor::run_alltoall(const Response& response, ProcessSetState& set, TensorEntry& entry) {
  // response.first_dims[i * n + j]: the rows member i sends to member j.
  const Request& req = entry.request;
  size_t n = set.members.size();
  size_t me = static_cast<size_t>(set_rank_of(set.members, rank_));
  size_t row = row_bytes(req);
  std::vector<size_t> send(n), receive(n);
  std::vector<int64_t>& received = entry.handle->received_splits;
  received.assign(n, 0);
  int64_t rows = 0;
  for (size_t j = 0; j < n; ++j) {
    send[j] = static_cast<size_t>(response.first_dims.at(me * n + j)) * row;
    received[j] = response.first_dims.at(j * n + me);
    receive[j] = static_cast<size_t>(received[j]) * row;
    rows += received[j];
  }
  void* output = allocate_output(set, entry, rows);
  backend_for(set, req.device).alltoallv(entry.input.data, send, output, receive);
}

void Executor::run_reducescatter(ProcessSetState& set, TensorEntry& entry) {
  const Request& req = entry.request;
  auto n = static_cast<int64_t>(set.members.size());
  int64_t rows = req.shape.at(0);
  size_t row_elements = row_bytes(req) / element_size(req.dtype);
  std::vector<size_t> counts;
  for (int64_t r = 0; r < n; ++r) {
    counts.push_back(static_cast<size_t>(rows / n + (r < rows % n ? 1 : 0)) * row_elements);
  }
  size_t me = static_cast<size_t>(set_rank_of(set.members, rank_));
  void* output = allocate_output(set, entry, rows / n + (static_cast<int64_t>(me) < rows % n));
  if (req.device != kCpuDevice) return reducescatter_on_device(set, entry, counts, output);
  const void* input = entry.input.data;
  if (req.prescale != 1.0) {
    // The caller's input is read-only here: scale a copy.
    scratch_.assign(static_cast<const std::byte*>(input),
                    static_cast<const std::byte*>(input) + entry.input.num_bytes());
    ops::scale(scratch_.data(), static_cast<size_t>(entry.input.num_elements()), req.dtype,
               req.prescale);
    input = scratch_.data();
  }
  bool average = req.reduce_op == ReduceOp::kAverage;
  set.backend->reduce_scatter(input, output, counts, req.dtype,
                              average ? ReduceOp::kSum : req.reduce_op);
  double post = req.postscale / (average ? static_cast<double>(n) : 1.0);
  if (post != 1.0) ops::scale(output, counts[me], req.dtype, post);
}

void Executor::reducescatter_on_device(ProcessSetState& set, const TensorEntry& entry,
                                       std::span<const size_t> counts, void* output) {
  const Request& req = entry.request;
  ops::DeviceBackend& device = device_backend_for(set, req.device);
  if (is_scaled(req)) {
    device.reduce_scatter_scaled(entry.input.data, output, counts, req.dtype,
                                 device_factor(req, set.members.size()));
  } else {
    device.reduce_scatter(entry.input.data, output, counts, req.dtype, req.reduce_op);
  }
}

void Executor::finish_join(const Response& response) {
  TensorEntry entry = queue_.take(response.names.at(0));
  check_submitted(entry, response.names[0]);
  joined_ = false;
  set_scalar_output(entry, response.last_joined);
  entry.handle->complete();
}

void Executor::add_process_set(const Response& response) {
  std::vector<TensorEntry> entries{queue_.take(response.names.at(0))};
  TensorEntry& entry = entries[0];
  check_submitted(entry, response.names[0]);
  const auto& ranks = entry.request.members;
  ProcessSetState state{.members = std::vector<int>(ranks.begin(), ranks.end())};
  try {
    if (std::binary_search(state.members.begin(), state.members.end(), rank_)) {
      state.backend = world().split(state.members,
                                    "cohort.process_set." + std::to_string(response.process_set));
    }
  } catch (...) {
    complete_with_current_error(entries);
    return;
  }
  {
    MutexLock lock(sets_mutex_);
    sets_[response.process_set] = std::move(state);
  }
  set_scalar_output(entry, response.process_set);
  entry.handle->complete();
}

void Executor::remove_process_set(const Response& response) {
  TensorEntry entry = queue_.take(response.names.at(0));
  check_submitted(entry, response.names[0]);
  int id = static_cast<int>(entry.request.members.at(0));
  // Every rank runs the removal here, after the set's last collectives (responses run in the same
  // order everywhere). A barrier of the world first: a member that finished its part of the set's
  // last collective must not close the set's connections while another member still reads its
  // last bytes there ("Connection closed by peer", seen under load).
  member_set(0).backend->barrier();
  ProcessSetState removed;  // its connections close outside the lock
  {
    MutexLock lock(sets_mutex_);
    auto it = sets_.find(id);
    if (it != sets_.end()) {
      removed = std::move(it->second);
      sets_.erase(it);
    }
    removed_[id] = removed.backend != nullptr;
  }
  entry.handle->complete();
}

}  // namespace cohort
