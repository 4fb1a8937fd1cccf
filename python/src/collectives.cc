// The collectives on tensors that Python describes as (data pointer, shape, dtype, device): the
// extension links no libtorch. cohort/torch/tensor_ops.py stages torch tensors (detached,
// contiguous), keeps them alive until their Work completes and turns results back into torch
// tensors (dlpack.h); here each call becomes one runtime call and its Handle. Every call releases
// the GIL: submission may wait for the runtime's queue, and a wait waits for every other rank,
// during which other Python threads (a data loader, a second submitting thread) must run.
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cohort/cohort.h"
#include "common.h"
#include "dlpack.h"

namespace cohort::python {

namespace {

// A tensor as Python describes it: data pointer, shape, DataType's value, device (-1: the CPU).
using TensorArg = std::tuple<uintptr_t, Shape, int, int>;

Tensor tensor_of(const TensorArg& arg) {
  const auto& [data, shape, dtype, device] = arg;
  if (dtype < 0 || dtype >= kNumDataTypes) {
    throw InvalidArgument("cohort: unknown dtype code " + std::to_string(dtype));
  }
  return {reinterpret_cast<void*>(data), static_cast<DataType>(dtype), shape, device};
}

AllreduceOptions options_of(ReduceOp op, double prescale, double postscale, int set) {
  return {.op = op, .prescale = prescale, .postscale = postscale, .process_set = ProcessSet{set}};
}

void bind_bytes(py::module_& m) {
  m.def(
      "broadcast_bytes",
      [](const py::bytes& data, int root, int set, std::string name) {
        std::string bytes = data;
        {
          py::gil_scoped_release unlocked;
          bytes = broadcast_bytes(std::move(bytes), root, std::move(name), ProcessSet{set});
        }
        return py::bytes(bytes);
      },
      py::arg("data"), py::arg("root_rank"), py::arg("process_set_id"), py::arg("name"));
  m.def(
      "allgather_bytes",
      [](const py::bytes& data, int set, std::string name) {
        std::string bytes = data;
        std::vector<std::string> all;
        {
          py::gil_scoped_release unlocked;
          all = allgather_bytes(std::move(bytes), std::move(name), ProcessSet{set});
        }
        py::list out;
        for (const std::string& b : all) out.append(py::bytes(b));
        return out;
      },
      py::arg("data"), py::arg("process_set_id"), py::arg("name"));
}

}  // namespace

void bind_collectives(py::module_& m) {
  bind_bytes(m);
  using release = py::call_guard<py::gil_scoped_release>;
  m.def(
      "default_name", [](const std::string& op) { return default_name(op); }, py::arg("op"),
      "`<op>.noname.<n>`: the name of this process's n-th unnamed `op`.");
  m.attr("num_dtypes") = kNumDataTypes;

  py::class_<Handle>(m, "Handle", "A submitted collective (cohort::Handle).")
      .def("poll", &Handle::poll, release(), "True once the collective completed or failed.")
      .def("wait", &Handle::wait, release(), "Waits for the collective; raises its error.")
      .def("output", &output_capsule,
           "A completed collective's runtime-owned result, as a DLPack capsule.")
      .def("received_splits", &Handle::received_splits, "Alltoall: rows received from each rank.")
      .def_property_readonly("name", &Handle::name);

  m.def(
      "allreduce_raw",
      [](const TensorArg& in, const std::optional<TensorArg>& out, ReduceOp op, double pre,
         double post, int set, std::string name) {
        AllreduceOptions options = options_of(op, pre, post, set);
        if (!out) return allreduce_async(std::move(name), tensor_of(in), options);
        return allreduce_async(std::move(name), tensor_of(in), tensor_of(*out), options);
      },
      release(), py::arg("tensor"), py::arg("output"), py::arg("op"), py::arg("prescale"),
      py::arg("postscale"), py::arg("process_set_id"), py::arg("name"),
      "Allreduce into `output`, or in place when it is None.");
  m.def(
      "grouped_allreduce_raw",
      [](const std::vector<TensorArg>& members, ReduceOp op, double pre, double post, int set,
         std::string name) {
        std::vector<Tensor> tensors;
        for (const TensorArg& t : members) tensors.push_back(tensor_of(t));
        return grouped_allreduce_async(std::move(name), tensors, options_of(op, pre, post, set));
      },
      release(), py::arg("tensors"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
      py::arg("process_set_id"), py::arg("name"), "Allreduce of every member, in place.");
  m.def(
      "broadcast_raw",
      [](const TensorArg& t, int root, int set, std::string name) {
        return broadcast_async(std::move(name), tensor_of(t), root, ProcessSet{set});
      },
      release(), py::arg("tensor"), py::arg("root_rank"), py::arg("process_set_id"),
      py::arg("name"), "Broadcast in place.");
  m.def(
      "allgather_raw",
      [](const TensorArg& t, int set, std::string name) {
        return allgather_async(std::move(name), tensor_of(t), ProcessSet{set});
      },
      release(), py::arg("tensor"), py::arg("process_set_id"), py::arg("name"));
  m.def(
      "alltoall_raw",
      [](const TensorArg& t, std::vector<int64_t> splits, int set, std::string name) {
        return alltoall_async(std::move(name), tensor_of(t), std::move(splits), ProcessSet{set});
      },
      release(), py::arg("tensor"), py::arg("splits"), py::arg("process_set_id"), py::arg("name"));
  m.def(
      "reducescatter_raw",
      [](const TensorArg& t, ReduceOp op, double pre, double post, int set, std::string name) {
        return reducescatter_async(std::move(name), tensor_of(t), options_of(op, pre, post, set));
      },
      release(), py::arg("tensor"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
      py::arg("process_set_id"), py::arg("name"));
}

}  // namespace cohort::python
