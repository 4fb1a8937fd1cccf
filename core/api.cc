// The public free functions: validate arguments locally, then hand them to the one Runtime.
#include <cmath>
#include <csignal>
#include <memory>
#include <mutex>

#include "cohort/cohort.h"
#include "core/log.h"
#include "core/runtime.h"

namespace cohort {
namespace {

// The process's single Runtime. Everything else hangs off it, so shutdown() + init() starts over.
std::mutex g_mutex;
std::shared_ptr<Runtime> g_runtime;

std::shared_ptr<Runtime> runtime() {
  std::lock_guard lock(g_mutex);
  if (!g_runtime) {
    throw NotInitialized("cohort is not initialized: call cohort::init() first");
  }
  return g_runtime;
}

// Gloo writes to sockets without MSG_NOSIGNAL: a peer that dies would kill this process with
// SIGPIPE instead of raising an error. Keep a handler the program installed itself.
void ignore_sigpipe() {
  struct sigaction current {};
  sigaction(SIGPIPE, nullptr, &current);
  if (current.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
}

void check_name(const std::string& name) {
  if (name.empty()) throw InvalidArgument("a collective needs a non-empty name");
}

void check_data(const std::string& name, const Tensor& t, const char* role) {
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

void check_allreduce(const std::string& name, const Tensor& in, const Tensor& out,
                     const AllreduceOptions& o) {
  check_data(name, in, "input");
  check_data(name, out, "output");
  if (in.dtype != out.dtype || in.shape != out.shape) {
    throw InvalidArgument("allreduce '" + name + "': input is " + std::string(to_string(in.dtype)) +
                          " " + to_string(in.shape) + " but output is " +
                          std::string(to_string(out.dtype)) + " " + to_string(out.shape));
  }
  if (in.dtype == DataType::kBool &&
      (o.op == ReduceOp::kAverage || o.prescale != 1.0 || o.postscale != 1.0)) {
    throw InvalidArgument("allreduce '" + name +
                          "': bool tensors support sum, min, max and product without scaling");
  }
  if (!std::isfinite(o.prescale) || !std::isfinite(o.postscale)) {
    throw InvalidArgument("allreduce '" + name + "': scale factors must be finite");
  }
}

Request make_request(std::string name, OpType type, const Tensor& t) {
  Request r;
  r.name = std::move(name);
  r.type = type;
  r.dtype = t.dtype;
  r.shape = t.shape;
  return r;
}

}  // namespace

void init() {
  std::lock_guard lock(g_mutex);
  if (g_runtime) return;
  Config config = Config::from_environment();
  log::set_level(config.log_level);
  ignore_sigpipe();
  g_runtime = std::make_shared<Runtime>(config);
  log::set_prefix("[rank " + std::to_string(g_runtime->topology().rank) + "]");
}

void shutdown() {
  std::shared_ptr<Runtime> rt;
  {
    std::lock_guard lock(g_mutex);
    rt = std::move(g_runtime);
  }
  if (rt) rt->shutdown();
}

bool is_initialized() {
  std::lock_guard lock(g_mutex);
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

Handle allreduce_async(std::string name, Tensor input, Tensor output, AllreduceOptions options) {
  check_name(name);
  check_allreduce(name, input, output, options);
  Request r = make_request(std::move(name), OpType::kAllreduce, input);
  r.reduce_op = options.op;
  r.prescale = options.prescale;
  r.postscale = options.postscale;
  return runtime()->submit(std::move(r), std::move(input), std::move(output));
}

void allreduce(std::string name, Tensor input, Tensor output, AllreduceOptions options) {
  allreduce_async(std::move(name), std::move(input), std::move(output), options).wait();
}

Handle broadcast_async(std::string name, Tensor buffer, int root) {
  check_name(name);
  check_data(name, buffer, "buffer");
  auto rt = runtime();
  if (root < 0 || root >= rt->topology().size) {
    throw InvalidArgument("broadcast '" + name + "': root rank " + std::to_string(root) +
                          " is outside the world of size " + std::to_string(rt->topology().size));
  }
  Request r = make_request(std::move(name), OpType::kBroadcast, buffer);
  r.root = root;
  return rt->submit(std::move(r), buffer, buffer);
}

void broadcast(std::string name, Tensor buffer, int root) {
  broadcast_async(std::move(name), std::move(buffer), root).wait();
}

Handle allgather_async(std::string name, Tensor input) {
  check_name(name);
  check_data(name, input, "input");
  if (input.shape.empty()) {
    throw InvalidArgument("allgather '" + name + "': needs at least one dimension to gather along");
  }
  Request r = make_request(std::move(name), OpType::kAllgather, input);
  return runtime()->submit(std::move(r), input, input);
}

OwnedTensor allgather(std::string name, Tensor input) {
  Handle h = allgather_async(std::move(name), std::move(input));
  h.wait();
  return h.output();
}

Handle barrier_async(std::string name) {
  check_name(name);
  Request r;
  r.name = std::move(name);
  r.type = OpType::kBarrier;
  return runtime()->submit(std::move(r), {}, {});
}

void barrier(std::string name) {
  barrier_async(std::move(name)).wait();
}

}  // namespace cohort
