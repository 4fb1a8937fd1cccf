// The public free functions: validate arguments locally, then hand them to the one Runtime.
#include <algorithm>
#include <cmath>
#include <csignal>
#include <memory>
#include <numeric>
#include <utility>

#include "base/log.h"
#include "base/mutex.h"
#include "cohort/cohort.h"
#include "core/elastic_join.h"
#include "core/runtime.h"
#include "core/runtime_slot.h"
#include "ops/device_backend.h"

namespace cohort {
namespace {

// The process's single Runtime. Everything else hangs off it, so shutdown() + init() starts over.
Mutex g_mutex;
std::shared_ptr<Runtime> g_runtime GUARDED_BY(g_mutex);
// Runtimes init() has built in this process (guarded by g_mutex). Each one after the first meets
// its peers in a fresh rendezvous scope, "init.<n>": every rank computes the same n without asking
// anyone, since every rank calls init() and shutdown() alike, and the previous runtime's Gloo
// addresses, still on the launcher's server, are never read again.
int g_inits GUARDED_BY(g_mutex) = 0;

std::shared_ptr<Runtime> runtime() {
  MutexLock lock(g_mutex);
  if (!g_runtime) {
    throw NotInitialized("cohort is not initialized: call cohort::init() first");
  }
  return g_runtime;
}

// Log lines name the rank, and in elastic mode the worker, whose rank changes between rounds.
void set_log_prefix(const Runtime& rt) {
  std::string prefix = "[rank " + std::to_string(rt.topology().rank);
  if (rt.config().elastic()) prefix += ", worker " + rt.config().worker_id;
  log::set_prefix(prefix + "]");
}

// Gloo writes to sockets without MSG_NOSIGNAL: a peer that dies would kill this process with
// SIGPIPE instead of raising an error. Keep a handler the program installed itself.
void ignore_sigpipe() {
  struct sigaction current {};
  sigaction(SIGPIPE, nullptr, &current);
  if (current.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
}

// cohortrun's elastic mode already warned about timeouts it fitted
// (elastic_job/elastic_timeouts.h): its workers only note it.
void report_fitted_timeouts(const Config& config) {
  if (!config.timeouts_fitted) return;
  if (config.elastic() && config.etcd_endpoints.empty()) {
    log::info(*config.timeouts_fitted);
  } else {
    log::warning(*config.timeouts_fitted);
  }
}

// Launchers pass SIGUSR1 and SIGUSR2 on to every worker (cohortrun, mpirun; Slurm sends them
// ahead of a preemption), and by default they end the process: a worker that did not ask for them
// must not die of them. So they are ignored, by a handler of ours rather than SIG_IGN, which a
// program the worker execs would inherit. A handler the program installed itself stays.
extern "C" void on_user_signal(int) {}

void ignore_user_signals() {
  for (int sig : {SIGUSR1, SIGUSR2}) {
    struct sigaction current {};
    sigaction(sig, nullptr, &current);
    if ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = on_user_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(sig, &action, nullptr);
  }
}

void check_name(const std::string& name) {
  if (name.empty()) throw InvalidArgument("a collective needs a non-empty name");
}

// A value outside an enum (a cast from an unchecked integer) is refused here, on the rank that
// made it. Rank 0's decoder refuses it too, but as a corrupt message, which ends the job on every
// rank; a rank's bad call must fail that call only.
void check_dtype(const std::string& name, DataType dtype, const char* role) {
  if (static_cast<int>(dtype) < kNumDataTypes) return;
  throw InvalidArgument(
      "'" + name + "': " + role + " data type " + std::to_string(static_cast<int>(dtype)) +
      " is not a cohort::DataType (0 to " + std::to_string(kNumDataTypes - 1) + ")");
}

void check_data(const std::string& name, const Tensor& t, const char* role) {
  check_dtype(name, t.dtype, role);
  for (int64_t d : t.shape) {
    if (d < 0) {
      throw InvalidArgument("'" + name + "': " + role + " shape " + to_string(t.shape) +
                            " has a negative dimension");
    }
  }
  if (t.data == nullptr && t.num_elements() > 0) {
    throw InvalidArgument("'" + name + "': " + role + " has no data pointer");
  }
}

// Device tensors go through NCCL; their runtime-owned results (allgather, alltoall,
// reducescatter) are allocated on the same device.
void check_device(const std::string& name, OpType type, const Tensor& t) {
  if (t.device == kCpuDevice) return;
  std::string what = std::string(to_string(type)) + " '" + name + "': ";
  if (t.device < kCpuDevice) {
    throw InvalidArgument(what + "device " + std::to_string(t.device) + " is not a device");
  }
  ops::require_device_backend(what);
}

bool is_floating(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
         dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
}

// Device reductions run wholly inside NCCL: in place, and with average and scale factors folded
// into one pre-multiplied sum (PreMulSum), which NCCL has for floating-point types only. `what()`
// begins the error message (built only on failure: grouped allreduces check every member).
template <typename What>
void check_device_reduction(const What& what, const Tensor& in, const Tensor& out,
                            const AllreduceOptions& o) {
  if (in.device == kCpuDevice && out.device == kCpuDevice) return;
  if (in.data != out.data || in.device != out.device) {
    throw InvalidArgument(what() + "device tensors are reduced in place (input = output)");
  }
  if (o.op != ReduceOp::kAverage && o.prescale == 1.0 && o.postscale == 1.0) return;
  if (o.op != ReduceOp::kSum && o.op != ReduceOp::kAverage) {
    throw InvalidArgument(what() + "scale factors on device tensors apply to sum and average only");
  }
  if (!is_floating(in.dtype)) {
    throw InvalidArgument(what() + "average and scale factors on device tensors need a " +
                          "floating-point type, not " + std::string(to_string(in.dtype)));
  }
}

Request make_request(std::string name, OpType type, const Tensor& t, ProcessSet set = {}) {
  check_device(name, type, t);
  Request r;
  r.device = t.device;
  r.name = std::move(name);
  r.type = type;
  r.dtype = t.dtype;
  r.shape = t.shape;
  r.process_set = set.id;
  return r;
}

// For allreduce and reducescatter (`type`).
void check_reduction(OpType type, const std::string& name, const Tensor& in, const Tensor& out,
                     const AllreduceOptions& o) {
  check_data(name, in, "input");
  check_data(name, out, "output");
  auto what = [&] { return std::string(to_string(type)) + " '" + name + "': "; };
  if (static_cast<int>(o.op) >= kNumReduceOps) {
    throw InvalidArgument(what() + "reduce op " + std::to_string(static_cast<int>(o.op)) +
                          " is not a cohort::ReduceOp (0 to " + std::to_string(kNumReduceOps - 1) +
                          ")");
  }
  if (in.dtype != out.dtype || in.shape != out.shape) {
    throw InvalidArgument(what() + "input is " + std::string(to_string(in.dtype)) + " " +
                          to_string(in.shape) + " but output is " +
                          std::string(to_string(out.dtype)) + " " + to_string(out.shape));
  }
  if (in.dtype == DataType::kBool &&
      (o.op == ReduceOp::kAverage || o.prescale != 1.0 || o.postscale != 1.0)) {
    throw InvalidArgument(what() +
                          "bool tensors support sum, min, max and product without scaling");
  }
  if (!std::isfinite(o.prescale) || !std::isfinite(o.postscale)) {
    throw InvalidArgument(what() + "scale factors must be finite");
  }
  check_device_reduction(what, in, out, o);
}

// For allreduce and reducescatter, whose arguments check_reduction has checked.
Request allreduce_request(std::string name, OpType type, const Tensor& input,
                          const AllreduceOptions& o) {
  Request r = make_request(std::move(name), type, input, o.process_set);
  r.reduce_op = o.op;
  r.prescale = o.prescale;
  r.postscale = o.postscale;
  return r;
}

}  // namespace

void init() {
  MutexLock lock(g_mutex);
  if (g_runtime && !g_runtime->defunct()) return;
  // A runtime that the other ranks left (they shut down while a collective of this rank waited
  // for them, which then failed; Horovod's suite does this when a test failed on one rank only)
  // is shut down here, as the others wait for (bounded by the shutdown timeout), and this init()
  // meets them afresh, as after a shutdown().
  if (g_runtime) std::exchange(g_runtime, nullptr)->shutdown();
  Config config = Config::from_environment();
  log::set_level(config.log_level);
  report_fitted_timeouts(config);
  ignore_sigpipe();
  ignore_user_signals();
  int generation = g_inits++;  // a failed attempt uses its generation up too, on every rank
  if (config.elastic()) {
    g_runtime = detail::join_elastic_job(config, generation);
  } else {
    std::string scope = generation == 0 ? "" : "init." + std::to_string(generation);
    g_runtime = std::make_shared<Runtime>(config, Formation{.rendezvous_scope = scope});
  }
  set_log_prefix(*g_runtime);
}

namespace detail {

std::shared_ptr<Runtime> current_runtime() {
  return runtime();
}

std::shared_ptr<Runtime> take_runtime() {
  MutexLock lock(g_mutex);
  return std::move(g_runtime);
}

void install_runtime(std::shared_ptr<Runtime> rt) {
  MutexLock lock(g_mutex);
  if (g_runtime) throw InvalidArgument("install_runtime: a runtime is already installed");
  set_log_prefix(*rt);
  g_runtime = std::move(rt);
}

}  // namespace detail

void shutdown() {
  std::shared_ptr<Runtime> rt;
  {
    MutexLock lock(g_mutex);
    rt = std::move(g_runtime);
  }
  if (rt) rt->shutdown();
}

bool is_initialized() {
  MutexLock lock(g_mutex);
  return g_runtime != nullptr;
}

int rank() {
  return runtime()->topology().rank;
}
int size() {
  return runtime()->topology().size;
}
int local_rank() {
  return runtime()->topology().local_rank;
}
int local_size() {
  return runtime()->topology().local_size;
}
int cross_rank() {
  return runtime()->topology().cross_rank;
}
int cross_size() {
  return runtime()->topology().cross_size;
}
std::string_view backend_name() {
  return runtime()->backend_name();
}

std::string default_name(std::string_view kind) {
  return runtime()->default_names().next(kind);
}

Handle allreduce_async(std::string name, Tensor input, Tensor output, AllreduceOptions options) {
  check_name(name);
  check_reduction(OpType::kAllreduce, name, input, output, options);
  Request r = allreduce_request(std::move(name), OpType::kAllreduce, input, options);
  return runtime()->submit(std::move(r), std::move(input), std::move(output));
}

void allreduce(std::string name, Tensor input, Tensor output, AllreduceOptions options) {
  allreduce_async(std::move(name), std::move(input), std::move(output), options).wait();
}

Handle grouped_allreduce_async(std::string name, const std::vector<Tensor>& tensors,
                               AllreduceOptions options) {
  check_name(name);
  if (tensors.empty()) {
    throw InvalidArgument("grouped allreduce '" + name + "': needs at least one tensor");
  }
  GroupSpec specs;
  std::vector<void*> memory;
  memory.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    try {
      check_reduction(OpType::kAllreduce, name, tensors[i], tensors[i], options);
    } catch (const InvalidArgument& e) {
      // The member's number only on failure: a step may hand over a thousand members.
      throw InvalidArgument("grouped allreduce member " + std::to_string(i) + ": " + e.what());
    }
    if (tensors[i].device != tensors[0].device) {
      throw InvalidArgument("grouped allreduce '" + name + "': member " + std::to_string(i) +
                            " is on device " + std::to_string(tensors[i].device) +
                            " but member 0 on " + std::to_string(tensors[0].device) +
                            "; a group's tensors share one device");
    }
    specs.add(tensors[i].dtype, tensors[i].shape);
    memory.push_back(tensors[i].data);
  }
  Request r = allreduce_request(std::move(name), OpType::kAllreduce, tensors[0], options);
  r.shape.clear();
  r.group = std::move(specs);
  return runtime()->submit(TensorEntry{std::move(r), {}, {}, nullptr, std::move(memory)});
}

void grouped_allreduce(std::string name, const std::vector<Tensor>& tensors,
                       AllreduceOptions options) {
  grouped_allreduce_async(std::move(name), tensors, options).wait();
}

Handle broadcast_async(std::string name, Tensor buffer, int root, ProcessSet set) {
  check_name(name);
  check_data(name, buffer, "buffer");
  auto rt = runtime();
  if (root < 0 || root >= rt->topology().size) {
    throw InvalidArgument("broadcast '" + name + "': root rank " + std::to_string(root) +
                          " is outside the world of size " + std::to_string(rt->topology().size));
  }
  Request r = make_request(std::move(name), OpType::kBroadcast, buffer, set);
  r.root = root;
  return rt->submit(std::move(r), buffer, buffer);
}

void broadcast(std::string name, Tensor buffer, int root, ProcessSet set) {
  broadcast_async(std::move(name), std::move(buffer), root, set).wait();
}

Handle allgather_async(std::string name, Tensor input, ProcessSet set) {
  check_name(name);
  check_data(name, input, "input");
  if (input.shape.empty()) {
    throw InvalidArgument("allgather '" + name + "': needs at least one dimension to gather along");
  }
  Request r = make_request(std::move(name), OpType::kAllgather, input, set);
  return runtime()->submit(std::move(r), input, input);
}

OwnedTensor allgather(std::string name, Tensor input, ProcessSet set) {
  Handle h = allgather_async(std::move(name), std::move(input), set);
  h.wait();
  return h.output();
}

Handle barrier_async(std::string name, ProcessSet set) {
  check_name(name);
  Request r = make_request(std::move(name), OpType::kBarrier, {}, set);
  return runtime()->submit(std::move(r), {}, {});
}

void barrier(std::string name, ProcessSet set) {
  barrier_async(std::move(name), set).wait();
}

Handle alltoall_async(std::string name, Tensor input, std::vector<int64_t> splits, ProcessSet set) {
  check_name(name);
  check_data(name, input, "input");
  auto rt = runtime();
  auto set_size = static_cast<int64_t>(rt->process_set_ranks(set.id).size());
  std::string what = "alltoall '" + name + "': ";
  if (input.shape.empty()) throw InvalidArgument(what + "needs at least one dimension to split");
  int64_t rows = input.shape[0];
  if (splits.empty()) {
    if (rows % set_size != 0) {
      throw InvalidArgument(what + "first dimension " + std::to_string(rows) +
                            " does not divide evenly over " + std::to_string(set_size) +
                            " ranks; pass splits");
    }
    splits.assign(static_cast<size_t>(set_size), rows / set_size);
  }
  bool negative = std::any_of(splits.begin(), splits.end(), [](int64_t s) { return s < 0; });
  int64_t total = std::accumulate(splits.begin(), splits.end(), int64_t{0});
  if (static_cast<int64_t>(splits.size()) != set_size || negative || total != rows) {
    throw InvalidArgument(what + "splits must be " + std::to_string(set_size) +
                          " non-negative row counts adding up to the first dimension " +
                          std::to_string(rows));
  }
  Request r = make_request(std::move(name), OpType::kAlltoall, input, set);
  r.splits = std::move(splits);
  return rt->submit(std::move(r), input, input);
}

AlltoallResult alltoall(std::string name, Tensor input, std::vector<int64_t> splits,
                        ProcessSet set) {
  Handle h = alltoall_async(std::move(name), std::move(input), std::move(splits), set);
  return {h.output(), h.received_splits()};
}

Handle reducescatter_async(std::string name, Tensor input, AllreduceOptions options) {
  check_name(name);
  check_reduction(OpType::kReducescatter, name, input, input, options);
  if (input.shape.empty()) {
    throw InvalidArgument("reducescatter '" + name + "': needs at least one dimension to split");
  }
  Request r = allreduce_request(std::move(name), OpType::kReducescatter, input, options);
  return runtime()->submit(std::move(r), input, input);
}

OwnedTensor reducescatter(std::string name, Tensor input, AllreduceOptions options) {
  return reducescatter_async(std::move(name), std::move(input), options).output();
}

int join() {
  Handle h = runtime()->submit(make_request("cohort.join", OpType::kJoin, {}), {}, {});
  h.wait();
  return h.output().as<int32_t>()[0];
}

ProcessSet add_process_set(std::vector<int> ranks) {
  auto rt = runtime();
  std::sort(ranks.begin(), ranks.end());
  int size = rt->topology().size;
  bool valid = !ranks.empty() && ranks.front() >= 0 && ranks.back() < size &&
               std::adjacent_find(ranks.begin(), ranks.end()) == ranks.end();
  if (!valid) {
    throw InvalidArgument("add_process_set: ranks must be distinct ranks of the world of size " +
                          std::to_string(size) + ", and at least one");
  }
  Request r = make_request("cohort.add_process_set", OpType::kAddProcessSet, {});
  r.members.assign(ranks.begin(), ranks.end());
  Handle h = rt->submit(std::move(r), {}, {});
  h.wait();
  return ProcessSet{h.output().as<int32_t>()[0]};
}

void remove_process_set(ProcessSet set) {
  auto rt = runtime();
  if (set.id == 0) {
    throw InvalidArgument("remove_process_set: the global process set (id 0) cannot be removed");
  }
  rt->process_set_ranks(set.id);  // throws InvalidArgument naming an unknown or removed set
  Request r = make_request("cohort.remove_process_set", OpType::kRemoveProcessSet, {});
  r.members = {set.id};
  rt->submit(std::move(r), {}, {}).wait();
}

std::vector<int> process_set_ranks(ProcessSet set) {
  return runtime()->process_set_ranks(set.id);
}

}  // namespace cohort
