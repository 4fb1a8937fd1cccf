// Cohort's collectives on at::Tensor: dtype mapping, contiguous staging of non-contiguous tensors,
// runtime-owned outputs and Work; unnamed calls are named by the runtime (cohort::default_name).
// CPU and CUDA tensors take the same path; what differs for CUDA (device index, waiting for
// torch's stream) is in cuda_tensors.h.
#include <c10/core/ScalarType.h>

#include <cstring>
#include <utility>

#include "cohort/torch/collectives.h"
#include "cuda_tensors.h"
#include "in_place.h"
#include "tensor_bridge.h"

namespace cohort::torch {

namespace detail {
namespace {

constexpr const char* kSupported =
    "bool, uint8, int8, int32, int64, float16, bfloat16, float32, float64; and int16 for the "
    "collectives that only move data: allgather, broadcast, alltoall";
}  // namespace

std::string dtype_name(at::ScalarType dtype) {
  switch (dtype) {
    case at::kBool:
      return "bool";
    case at::kByte:
      return "uint8";
    case at::kChar:
      return "int8";
    case at::kShort:
      return "int16";
    case at::kInt:
      return "int32";
    case at::kLong:
      return "int64";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    case at::kFloat:
      return "float32";
    case at::kDouble:
      return "float64";
    case at::kComplexHalf:
      return "complex32";
    case at::kComplexFloat:
      return "complex64";
    case at::kComplexDouble:
      return "complex128";
    default:
      return c10::toString(dtype);
  }
}

namespace {

std::string where_of(std::string_view what) {
  return "cohort.torch." + std::string(what) + ": ";
}

}  // namespace

void check_tensor(const at::Tensor& tensor, std::string_view what) {
  std::string where = where_of(what);
  if (!tensor.defined()) throw InvalidArgument(where + "the tensor is undefined");
  check_cuda_tensor(tensor, where);
  if (!tensor.is_cuda() && !tensor.device().is_cpu()) {
    throw InvalidArgument(
        where + "tensor on device " + tensor.device().str() +
        "; Cohort takes CPU tensors and, in builds with its CUDA path, CUDA tensors");
  }
  if (tensor.layout() != at::kStrided) {
    throw InvalidArgument(where + "sparse or other non-strided tensors are not supported");
  }
  to_cohort(tensor.scalar_type());
}

void check_host_tensor(const at::Tensor& tensor, std::string_view what) {
  check_tensor(tensor, what);
  if (tensor.is_cuda()) {
    throw InvalidArgument(where_of(what) +
                          "CUDA tensor; this reads host memory, so it takes CPU "
                          "tensors only: move the tensor to the CPU");
  }
}

void check_group(const std::vector<at::Tensor>& tensors, std::string_view what) {
  for (const at::Tensor& t : tensors) check_tensor(t, what);
  for (size_t i = 1; i < tensors.size(); ++i) {
    if (tensors[i].device() == tensors[0].device()) continue;
    throw InvalidArgument(where_of(what) + "tensor " + std::to_string(i) + " is on " +
                          tensors[i].device().str() + " but tensor 0 on " +
                          tensors[0].device().str() +
                          "; a grouped call takes tensors on one device (no mixing of CPU and "
                          "CUDA tensors)");
  }
}

Tensor view_of(const at::Tensor& tensor) {
  return {tensor.data_ptr(), to_cohort(tensor.scalar_type()),
          Shape(tensor.sizes().begin(), tensor.sizes().end()), device_index(tensor)};
}

at::Tensor to_tensor(const OwnedTensor& owned) {
  if (owned.device != kCpuDevice) return wrap_device_result(owned);
  // One copy out of the runtime's buffer; handing the allocation to torch would save it.
  at::Tensor out =
      at::empty(at::IntArrayRef(owned.shape), at::TensorOptions().dtype(to_torch(owned.dtype)));
  if (owned.num_bytes() > 0) std::memcpy(out.data_ptr(), owned.data(), owned.num_bytes());
  return out;
}

std::string name_or_default(std::string name, std::string_view op) {
  if (!name.empty()) return name;
  return cohort::default_name(op);
}

}  // namespace detail

DataType to_cohort(at::ScalarType dtype) {
  switch (dtype) {
    case at::kBool:
      return DataType::kBool;
    case at::kByte:
      return DataType::kUInt8;
    case at::kChar:
      return DataType::kInt8;
    case at::kInt:
      return DataType::kInt32;
    case at::kLong:
      return DataType::kInt64;
    case at::kHalf:
      return DataType::kFloat16;
    case at::kBFloat16:
      return DataType::kBFloat16;
    case at::kFloat:
      return DataType::kFloat32;
    case at::kDouble:
      return DataType::kFloat64;
    default:
      throw InvalidArgument("cohort.torch: dtype " + detail::dtype_name(dtype) +
                            " is not supported (supported: " + detail::kSupported + ")");
  }
}

at::ScalarType to_torch(DataType dtype) {
  switch (dtype) {
    case DataType::kBool:
      return at::kBool;
    case DataType::kUInt8:
      return at::kByte;
    case DataType::kInt8:
      return at::kChar;
    case DataType::kInt32:
      return at::kInt;
    case DataType::kInt64:
      return at::kLong;
    case DataType::kFloat16:
      return at::kHalf;
    case DataType::kBFloat16:
      return at::kBFloat16;
    case DataType::kFloat32:
      return at::kFloat;
    case DataType::kFloat64:
      return at::kDouble;
  }
  throw InvalidArgument("cohort.torch: unknown cohort::DataType " +
                        std::to_string(static_cast<int>(dtype)));
}

// ---- Work ----

Work::Work(std::shared_ptr<State> state) : state_(std::move(state)) {}

namespace {

Work::State& live(const std::shared_ptr<Work::State>& state) {
  if (!state) throw InvalidArgument("cohort.torch.Work: this Work holds no collective");
  return *state;
}

// Waits for the collective (rethrowing its error), then finishes it once.
const std::vector<at::Tensor>& results_of(Work::State& state) {
  state.handle.wait();
  MutexLock lock(state.mutex);
  if (!state.finished) {
    state.results = state.finish(state.handle);
    state.finished = true;
    state.finish = nullptr;
    state.keep.clear();
  }
  return state.results;
}

}  // namespace

bool Work::poll() const {
  return live(state_).handle.poll();
}

at::Tensor Work::wait() const {
  State& state = live(state_);
  const std::vector<at::Tensor>& results = results_of(state);
  if (state.kind == State::Kind::kGroup && results.size() != 1) {
    throw InvalidArgument("cohort.torch.Work('" + state.name +
                          "'): a grouped allreduce has several results; use wait_all()");
  }
  if (results.empty()) return {};
  return results.front();
}

std::vector<at::Tensor> Work::wait_all() const {
  State& state = live(state_);
  const std::vector<at::Tensor>& results = results_of(state);
  if (state.kind == State::Kind::kAlltoall) return {results.front()};
  return results;
}

at::Tensor Work::received_splits() const {
  State& state = live(state_);
  if (state.kind != State::Kind::kAlltoall) {
    throw InvalidArgument("cohort.torch.Work('" + state.name +
                          "'): received_splits() is for an alltoall");
  }
  return results_of(state).at(1);
}

const std::string& Work::name() const {
  return live(state_).name;
}

// ---- Staging ----

namespace {

// A tensor as the runtime will see it: `caller` is what the caller gave, `target` the same tensor
// detached from autograd, `staged` contiguous memory for the collective (the same tensor when
// already contiguous).
struct Staged {
  at::Tensor caller;
  at::Tensor target;
  at::Tensor staged;
  // After an in-place collective: the result goes back into a non-contiguous target.
  void copy_back() const {
    if (!staged.is_same(target)) target.copy_(staged);
  }
};

Staged stage(const at::Tensor& tensor, std::string_view what) {
  detail::check_tensor(tensor, what);
  // detach(): the collective reads and writes the data without autograd tracking it; in place,
  // autograd learns of the change from the version counter (in_place.h).
  at::Tensor target = tensor.detach();
  return {tensor, target, target.is_contiguous() ? target : target.contiguous()};
}

// A contiguous, detached copy: out-of-place calls leave the caller's tensor untouched.
at::Tensor fresh_copy(const at::Tensor& tensor, std::string_view what) {
  detail::check_tensor(tensor, what);
  return tensor.detach().clone(at::MemoryFormat::Contiguous);
}

// int16 has no Cohort type (nor NCCL one). The collectives that only move data (allgather,
// broadcast, alltoall) move it as float16, whose elements have its size, and give int16 back; the
// reductions refuse it (to_cohort).
at::Tensor as_movable(const at::Tensor& tensor) {
  return tensor.defined() && tensor.scalar_type() == at::kShort ? tensor.view(at::kHalf) : tensor;
}

at::Tensor as_dtype(const at::Tensor& moved, at::ScalarType dtype) {
  return moved.scalar_type() == dtype ? moved : moved.view(dtype);
}

Work make_work(std::string name, Work::State::Kind kind, Handle handle,
               std::vector<at::Tensor> keep,
               std::function<std::vector<at::Tensor>(const Handle&)> finish) {
  auto state = std::make_shared<Work::State>();
  state->name = std::move(name);
  state->kind = kind;
  state->handle = std::move(handle);
  MutexLock lock(state->mutex);  // not shared yet: for the analysis, at no cost
  state->keep = std::move(keep);
  state->finish = std::move(finish);
  return Work(std::move(state));
}

// An in-place collective on one tensor, submitted by `submit` on the staged view; `moves_data`:
// the collective only moves data, so it takes int16 (as_movable).
Work in_place(const at::Tensor& tensor, std::string name, std::string_view op,
              const std::function<Handle(std::string, Tensor)>& submit, bool moves_data = false) {
  Staged s = stage(moves_data ? as_movable(tensor) : tensor, op);
  s.caller = tensor;
  detail::check_in_place(tensor, std::string(op) + "_");
  name = detail::name_or_default(std::move(name), op);
  detail::wait_for_producer(s.staged);
  Handle handle = submit(name, detail::view_of(s.staged));
  detail::mark_modified(tensor);
  return make_work(std::move(name), Work::State::Kind::kSingle, std::move(handle),
                   {s.target, s.staged}, [s](const Handle&) {
                     s.copy_back();
                     return std::vector<at::Tensor>{s.caller};
                   });
}

// A collective whose result the runtime allocates (allgather, reducescatter); `moves_data` as
// in_place's.
Work owned_output(const at::Tensor& input, std::string name, std::string_view op,
                  const std::function<Handle(std::string, Tensor)>& submit,
                  bool moves_data = false) {
  at::Tensor moved = moves_data ? as_movable(input) : input;
  detail::check_tensor(moved, op);
  at::Tensor in = moved.detach().contiguous();
  at::ScalarType dtype = input.scalar_type();
  name = detail::name_or_default(std::move(name), op);
  detail::wait_for_producer(in);
  Handle handle = submit(name, detail::view_of(in));
  return make_work(std::move(name), Work::State::Kind::kSingle, std::move(handle), {in},
                   [dtype](const Handle& h) {
                     return std::vector{as_dtype(detail::to_tensor(h.output()), dtype)};
                   });
}

std::vector<int64_t> splits_of(const at::Tensor& splits) {
  if (!splits.defined() || splits.numel() == 0) return {};
  if (splits.dim() != 1 ||
      (splits.scalar_type() != at::kLong && splits.scalar_type() != at::kInt)) {
    throw InvalidArgument(
        "cohort.torch.alltoall: splits must be a 1-D int64 or int32 tensor, not " +
        std::to_string(splits.dim()) + "-D " + detail::dtype_name(splits.scalar_type()));
  }
  at::Tensor s = splits.detach().to(at::kCPU, at::kLong).contiguous();
  const int64_t* p = s.data_ptr<int64_t>();
  return {p, p + s.numel()};
}

}  // namespace

// ---- Allreduce ----

Work allreduce_async(const at::Tensor& input, AllreduceOptions options, std::string name) {
  detail::check_tensor(input, "allreduce");
  // The runtime reduces device tensors in place only: a CUDA input is reduced in a copy.
  if (input.is_cuda()) {
    return allreduce_async_(fresh_copy(input, "allreduce"), options, std::move(name));
  }
  at::Tensor in = input.detach().contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  name = detail::name_or_default(std::move(name), "allreduce");
  Handle handle = cohort::allreduce_async(name, detail::view_of(in), detail::view_of(out), options);
  return make_work(std::move(name), Work::State::Kind::kSingle, std::move(handle), {in, out},
                   [out](const Handle&) { return std::vector<at::Tensor>{out}; });
}

at::Tensor allreduce(const at::Tensor& input, AllreduceOptions options, std::string name) {
  return allreduce_async(input, options, std::move(name)).wait();
}

Work allreduce_async_(const at::Tensor& tensor, AllreduceOptions options, std::string name) {
  return in_place(tensor, std::move(name), "allreduce", [&](std::string n, Tensor t) {
    return cohort::allreduce_async(std::move(n), t, options);
  });
}

at::Tensor allreduce_(const at::Tensor& tensor, AllreduceOptions options, std::string name) {
  return allreduce_async_(tensor, options, std::move(name)).wait();
}

// ---- Grouped allreduce ----

Work grouped_allreduce_async_(const std::vector<at::Tensor>& tensors, AllreduceOptions options,
                              std::string name) {
  detail::check_group(tensors, "grouped_allreduce");
  std::vector<Staged> staged;
  std::vector<Tensor> views;
  std::vector<at::Tensor> keep;
  for (const at::Tensor& t : tensors) {
    staged.push_back(stage(t, "grouped_allreduce"));
    detail::check_in_place(t, "grouped_allreduce_");
    views.push_back(detail::view_of(staged.back().staged));
    keep.push_back(staged.back().target);
    keep.push_back(staged.back().staged);
  }
  name = detail::name_or_default(std::move(name), "grouped_allreduce");
  // One device for all: one wait for its stream covers every member and staging copy.
  if (!staged.empty()) detail::wait_for_producer(staged.front().staged);
  Handle handle = cohort::grouped_allreduce_async(name, views, options);
  for (const at::Tensor& t : tensors) detail::mark_modified(t);
  return make_work(std::move(name), Work::State::Kind::kGroup, std::move(handle), std::move(keep),
                   [staged = std::move(staged)](const Handle&) {
                     std::vector<at::Tensor> results;
                     for (const Staged& s : staged) {
                       s.copy_back();
                       results.push_back(s.caller);
                     }
                     return results;
                   });
}

std::vector<at::Tensor> grouped_allreduce_(const std::vector<at::Tensor>& tensors,
                                           AllreduceOptions options, std::string name) {
  return grouped_allreduce_async_(tensors, options, std::move(name)).wait_all();
}

Work grouped_allreduce_async(const std::vector<at::Tensor>& inputs, AllreduceOptions options,
                             std::string name) {
  detail::check_group(inputs, "grouped_allreduce");
  std::vector<at::Tensor> copies;
  for (const at::Tensor& t : inputs) copies.push_back(fresh_copy(t, "grouped_allreduce"));
  return grouped_allreduce_async_(copies, options, std::move(name));
}

std::vector<at::Tensor> grouped_allreduce(const std::vector<at::Tensor>& inputs,
                                          AllreduceOptions options, std::string name) {
  return grouped_allreduce_async(inputs, options, std::move(name)).wait_all();
}

// ---- Allgather, broadcast, alltoall, reducescatter ----

Work allgather_async(const at::Tensor& input, std::string name, ProcessSet set) {
  return owned_output(
      input, std::move(name), "allgather",
      [&](std::string n, Tensor t) { return cohort::allgather_async(std::move(n), t, set); },
      /*moves_data=*/true);
}

at::Tensor allgather(const at::Tensor& input, std::string name, ProcessSet set) {
  return allgather_async(input, std::move(name), set).wait();
}

Work broadcast_async_(const at::Tensor& tensor, int root, std::string name, ProcessSet set) {
  return in_place(
      tensor, std::move(name), "broadcast",
      [&](std::string n, Tensor t) { return cohort::broadcast_async(std::move(n), t, root, set); },
      /*moves_data=*/true);
}

at::Tensor broadcast_(const at::Tensor& tensor, int root, std::string name, ProcessSet set) {
  return broadcast_async_(tensor, root, std::move(name), set).wait();
}

Work broadcast_async(const at::Tensor& input, int root, std::string name, ProcessSet set) {
  detail::check_tensor(as_movable(input), "broadcast");
  return broadcast_async_(input.detach().clone(at::MemoryFormat::Contiguous), root, std::move(name),
                          set);
}

at::Tensor broadcast(const at::Tensor& input, int root, std::string name, ProcessSet set) {
  return broadcast_async(input, root, std::move(name), set).wait();
}

Work alltoall_async(const at::Tensor& input, const at::Tensor& splits, std::string name,
                    ProcessSet set) {
  detail::check_tensor(as_movable(input), "alltoall");
  std::vector<int64_t> counts = splits_of(splits);
  at::Tensor in = as_movable(input).detach().contiguous();
  at::ScalarType dtype = input.scalar_type();
  name = detail::name_or_default(std::move(name), "alltoall");
  detail::wait_for_producer(in);
  Handle handle = cohort::alltoall_async(name, detail::view_of(in), std::move(counts), set);
  return make_work(
      std::move(name), Work::State::Kind::kAlltoall, std::move(handle), {in},
      [dtype](const Handle& h) {
        const std::vector<int64_t>& received = h.received_splits();
        at::Tensor r = at::tensor(at::ArrayRef<int64_t>(received), at::kLong);
        return std::vector<at::Tensor>{as_dtype(detail::to_tensor(h.output()), dtype), r};
      });
}

std::pair<at::Tensor, at::Tensor> alltoall(const at::Tensor& input, const at::Tensor& splits,
                                           std::string name, ProcessSet set) {
  Work work = alltoall_async(input, splits, std::move(name), set);
  return {work.wait(), work.received_splits()};
}

Work reducescatter_async(const at::Tensor& input, AllreduceOptions options, std::string name) {
  return owned_output(input, std::move(name), "reducescatter", [&](std::string n, Tensor t) {
    return cohort::reducescatter_async(std::move(n), t, options);
  });
}

at::Tensor reducescatter(const at::Tensor& input, AllreduceOptions options, std::string name) {
  return reducescatter_async(input, options, std::move(name)).wait();
}

// ---- Barrier, join ----

void barrier(ProcessSet set) {
  cohort::barrier("cohort.torch.barrier", set);
}

int join() {
  return cohort::join();
}

}  // namespace cohort::torch
