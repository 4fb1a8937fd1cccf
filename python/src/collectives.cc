// The collectives of the libtorch adapter (cohort::torch) on torch.Tensor, blocking, asynchronous
// (Work) and in place. Every call releases the GIL: submission may wait for the runtime's queue,
// and a blocking call or Work.wait() waits for every other rank, during which other Python threads
// (a data loader, a second submitting thread) must run.
#include <torch/csrc/utils/pybind.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cohort/torch/broadcast.h"
#include "cohort/torch/collectives.h"
#include "common.h"

namespace cohort::python {

namespace {

namespace ct = cohort::torch;

AllreduceOptions options_of(ReduceOp op, double prescale, double postscale, int set) {
  return {.op = op, .prescale = prescale, .postscale = postscale, .process_set = ProcessSet{set}};
}

at::Tensor splits_or_undefined(const std::optional<at::Tensor>& splits) {
  return splits ? *splits : at::Tensor();
}

// Destroys a Work without the GIL: a Work dropped before its collective completed hands its
// tensors to the adapter's background thread (never blocks), and releasing tensors may take the
// GIL inside torch, which must not wait on a thread holding it.
struct DeleteWithoutGil {
  void operator()(ct::Work* work) const {
    py::gil_scoped_release unlocked;
    delete work;
  }
};

}  // namespace

// broadcast_object and allgather_object: the adapter's byte collectives. The bytes are copied in
// and out with the GIL held; the collectives run without it.
void bind_bytes(py::module_& m) {
  m.def(
      "broadcast_bytes",
      [](const py::bytes& data, int root, int set, std::string name) {
        std::string bytes = data;
        {
          py::gil_scoped_release unlocked;
          bytes = ct::broadcast_bytes(std::move(bytes), root, std::move(name), ProcessSet{set});
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
          all = ct::allgather_bytes(std::move(bytes), std::move(name), ProcessSet{set});
        }
        py::list out;
        for (const std::string& b : all) out.append(py::bytes(b));
        return out;
      },
      py::arg("data"), py::arg("process_set_id"), py::arg("name"));
}

void bind_collectives(py::module_& m) {
  bind_bytes(m);
  using release = py::call_guard<py::gil_scoped_release>;

  py::class_<ct::Work, std::unique_ptr<ct::Work, DeleteWithoutGil>>(
      m, "Work", "An asynchronous collective; keeps its tensors alive.")
      .def("poll", &ct::Work::poll, release(), "True once the collective completed or failed.")
      .def("wait", &ct::Work::wait, release(), "Waits; the output tensor. Raises its error.")
      .def("wait_all", &ct::Work::wait_all, release(), "Grouped allreduce: every member's result.")
      .def("received_splits", &ct::Work::received_splits, release(),
           "Alltoall: rows received from each rank (int64).")
      .def_property_readonly("name", &ct::Work::name);

  // The reductions take (tensor, op, prescale, postscale, process set id, name).

  m.def(
      "allreduce_async",
      [](const at::Tensor& t, ReduceOp op, double pre, double post, int set, std::string name) {
        return ct::allreduce_async(t, options_of(op, pre, post, set), std::move(name));
      },
      release(), py::arg("tensor"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
      py::arg("process_set_id"), py::arg("name"));
  m.def(
      "allreduce",
      [](const at::Tensor& t, ReduceOp op, double pre, double post, int set, std::string name) {
        return ct::allreduce(t, options_of(op, pre, post, set), std::move(name));
      },
      release(), py::arg("tensor"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
      py::arg("process_set_id"), py::arg("name"));
  m.def(
      "allreduce_async_",
      [](const at::Tensor& t, ReduceOp op, double pre, double post, int set, std::string name) {
        return ct::allreduce_async_(t, options_of(op, pre, post, set), std::move(name));
      },
      release(), py::arg("tensor"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
      py::arg("process_set_id"), py::arg("name"));
  m.def(
      "allreduce_",
      [](const at::Tensor& t, ReduceOp op, double pre, double post, int set, std::string name) {
        return ct::allreduce_(t, options_of(op, pre, post, set), std::move(name));
      },
      release(), py::arg("tensor"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
      py::arg("process_set_id"), py::arg("name"));

  m.def(
      "grouped_allreduce_async",
      [](const std::vector<at::Tensor>& ts, ReduceOp op, double pre, double post, int set,
         std::string name) {
        return ct::grouped_allreduce_async(ts, options_of(op, pre, post, set), std::move(name));
      },
      release(), py::arg("tensors"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
      py::arg("process_set_id"), py::arg("name"));
  m.def(
      "grouped_allreduce",
      [](const std::vector<at::Tensor>& ts, ReduceOp op, double pre, double post, int set,
         std::string name) {
        return ct::grouped_allreduce(ts, options_of(op, pre, post, set), std::move(name));
      },
      release(), py::arg("tensors"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
      py::arg("process_set_id"), py::arg("name"));
  m.def(
      "grouped_allreduce_async_",
      [](const std::vector<at::Tensor>& ts, ReduceOp op, double pre, double post, int set,
         std::string name) {
        return ct::grouped_allreduce_async_(ts, options_of(op, pre, post, set), std::move(name));
      },
      release(), py::arg("tensors"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
      py::arg("process_set_id"), py::arg("name"));
  m.def(
      "grouped_allreduce_",
      [](const std::vector<at::Tensor>& ts, ReduceOp op, double pre, double post, int set,
         std::string name) {
        return ct::grouped_allreduce_(ts, options_of(op, pre, post, set), std::move(name));
      },
      release(), py::arg("tensors"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
      py::arg("process_set_id"), py::arg("name"));

  m.def(
      "allgather_async",
      [](const at::Tensor& t, int set, std::string name) {
        return ct::allgather_async(t, std::move(name), ProcessSet{set});
      },
      release(), py::arg("tensor"), py::arg("process_set_id"), py::arg("name"));
  m.def(
      "allgather",
      [](const at::Tensor& t, int set, std::string name) {
        return ct::allgather(t, std::move(name), ProcessSet{set});
      },
      release(), py::arg("tensor"), py::arg("process_set_id"), py::arg("name"));

  m.def(
      "broadcast_async",
      [](const at::Tensor& t, int root, int set, std::string name) {
        return ct::broadcast_async(t, root, std::move(name), ProcessSet{set});
      },
      release(), py::arg("tensor"), py::arg("root_rank"), py::arg("process_set_id"),
      py::arg("name"));
  m.def(
      "broadcast",
      [](const at::Tensor& t, int root, int set, std::string name) {
        return ct::broadcast(t, root, std::move(name), ProcessSet{set});
      },
      release(), py::arg("tensor"), py::arg("root_rank"), py::arg("process_set_id"),
      py::arg("name"));
  m.def(
      "broadcast_async_",
      [](const at::Tensor& t, int root, int set, std::string name) {
        return ct::broadcast_async_(t, root, std::move(name), ProcessSet{set});
      },
      release(), py::arg("tensor"), py::arg("root_rank"), py::arg("process_set_id"),
      py::arg("name"));
  m.def(
      "broadcast_",
      [](const at::Tensor& t, int root, int set, std::string name) {
        return ct::broadcast_(t, root, std::move(name), ProcessSet{set});
      },
      release(), py::arg("tensor"), py::arg("root_rank"), py::arg("process_set_id"),
      py::arg("name"));

  m.def(
      "alltoall_async",
      [](const at::Tensor& t, const std::optional<at::Tensor>& splits, int set, std::string name) {
        return ct::alltoall_async(t, splits_or_undefined(splits), std::move(name), ProcessSet{set});
      },
      release(), py::arg("tensor"), py::arg("splits"), py::arg("process_set_id"), py::arg("name"));

  m.def(
      "reducescatter_async",
      [](const at::Tensor& t, ReduceOp op, double pre, double post, int set, std::string name) {
        return ct::reducescatter_async(t, options_of(op, pre, post, set), std::move(name));
      },
      release(), py::arg("tensor"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
      py::arg("process_set_id"), py::arg("name"));
  m.def(
      "reducescatter",
      [](const at::Tensor& t, ReduceOp op, double pre, double post, int set, std::string name) {
        return ct::reducescatter(t, options_of(op, pre, post, set), std::move(name));
      },
      release(), py::arg("tensor"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
      py::arg("process_set_id"), py::arg("name"));
}

}  // namespace cohort::python
