// The extension module cohort._C: Cohort's errors as Python exception classes, the world's shape,
// process sets, barrier and join. The collectives (collectives.cc) and the elastic State, sampler
// and run (elastic.cc) are bound by their own translation units.
#include <Python.h>

#include <exception>
#include <string>
#include <vector>

#include "cohort/cohort.h"
#include "common.h"

#if COHORT_PY_HAVE_NCCL
#include <nccl.h>
#endif

namespace cohort::python {

ErrorClasses& error_classes() {
  static ErrorClasses classes;
  return classes;
}

void rethrow_python_error(py::error_already_set& e) {
  const ErrorClasses& classes = error_classes();
  if (e.matches(classes.internal)) {
    std::string message = py::str(e.value());
    throw PyInternalError(message, std::move(e));
  }
  if (e.matches(classes.hosts_updated)) {
    std::string message = py::str(e.value());
    throw PyHostsUpdatedInterrupt(message, std::move(e));
  }
  throw;
}

namespace detail {

// A new exception class cohort.<name> with the given bases, added to the module.
py::handle make_error(py::module_& m, const char* name, py::handle bases, const char* doc) {
  std::string qualified = std::string("cohort.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(type));  // the module keeps the reference
  return type;
}

void make_errors(py::module_& m) {
  ErrorClasses& c = error_classes();
  c.error = make_error(m, "CohortError", PyExc_RuntimeError,
                       "The base of every error Cohort raises (a RuntimeError).");
  c.invalid =
      make_error(m, "InvalidArgument", py::make_tuple(c.error, py::handle(PyExc_ValueError)),
                 "A bad argument or environment value; nothing was changed.");
  c.not_initialized =
      make_error(m, "NotInitialized", c.error, "Called before init(), after shutdown(), or twice.");
  c.mismatch = make_error(m, "MismatchError", c.error,
                          "The ranks disagreed about a collective; the runtime keeps running.");
  c.internal = make_error(m, "InternalError", c.error,
                          "The communication layer failed (a peer died, a connection broke, a "
                          "timeout); elastic.run recovers from it.");
  c.stall = make_error(m, "StallError", c.error,
                       "Some ranks never submitted a collective that others did.");
  c.shutdown = make_error(m, "ShutdownError", c.error,
                          "The runtime shut down before the request could complete.");
  c.checkpoint =
      make_error(m, "CheckpointError", c.error, "A checkpoint could not be written or loaded.");
  c.unreachable = make_error(m, "StoreUnreachable", c.error,
                             "The launcher's rendezvous store (its server, or etcd) could not be "
                             "reached in time.");
  c.hosts_updated = make_error(m, "HostsUpdatedInterrupt", c.error,
                               "The launcher announced added or removed hosts; elastic.run resets "
                               "into the new world.");
}

// Cohort's C++ errors become the Python classes above, with the same messages; an exception that
// started in Python and crossed C++ becomes the original object again.
void translate(std::exception_ptr p) {
  const ErrorClasses& c = error_classes();
  try {
    if (p) std::rethrow_exception(p);
  } catch (const PyInternalError& e) {
    e.restore();
  } catch (const PyHostsUpdatedInterrupt& e) {
    e.restore();
  } catch (const elastic::HostsUpdatedInterrupt& e) {
    PyErr_SetString(c.hosts_updated.ptr(), e.what());
  } catch (const InvalidArgument& e) {
    PyErr_SetString(c.invalid.ptr(), e.what());
  } catch (const NotInitialized& e) {
    PyErr_SetString(c.not_initialized.ptr(), e.what());
  } catch (const MismatchError& e) {
    PyErr_SetString(c.mismatch.ptr(), e.what());
  } catch (const InternalError& e) {
    PyErr_SetString(c.internal.ptr(), e.what());
  } catch (const StallError& e) {
    PyErr_SetString(c.stall.ptr(), e.what());
  } catch (const ShutdownError& e) {
    PyErr_SetString(c.shutdown.ptr(), e.what());
  } catch (const CheckpointError& e) {
    PyErr_SetString(c.checkpoint.ptr(), e.what());
  } catch (const StoreUnreachable& e) {
    PyErr_SetString(c.unreachable.ptr(), e.what());
  } catch (const Error& e) {
    PyErr_SetString(c.error.ptr(), e.what());
  }
}

void bind_basics(py::module_& m) {
  using release = py::call_guard<py::gil_scoped_release>;
  m.def("init", &cohort::init, release(), "Joins the job (see cohort::init).");
  m.def("shutdown", &cohort::shutdown, release(), "Leaves the job once every rank has called it.");
  m.def("is_initialized", &cohort::is_initialized);
  m.def("rank", &cohort::rank);
  m.def("size", &cohort::size);
  m.def("local_rank", &cohort::local_rank);
  m.def("local_size", &cohort::local_size);
  m.def("cross_rank", &cohort::cross_rank);
  m.def("cross_size", &cohort::cross_size);
  m.def("backend_name", [] { return std::string(cohort::backend_name()); });
  // As Horovod's nccl_built(): the NCCL version this build has (NCCL_VERSION_CODE), 0 without.
#if COHORT_PY_HAVE_NCCL
  m.attr("nccl_built") = static_cast<int>(NCCL_VERSION_CODE);
#else
  m.attr("nccl_built") = 0;
#endif
  // Whether CUDA tensors go through this build (NCCL or the staged backend).
  // The CUDA major version it was built for (0 without): torch's must be the same.
#if COHORT_PY_CUDA_TENSORS
  m.attr("cuda_built") = true;
  m.attr("cuda_major") = COHORT_PY_CUDA_MAJOR;
#else
  m.attr("cuda_built") = false;
  m.attr("cuda_major") = 0;
#endif

  m.def(
      "add_process_set",
      [](std::vector<int> ranks) { return add_process_set(std::move(ranks)).id; }, release(),
      py::arg("ranks"), "Creates a process set over `ranks` (collective); its id.");
  m.def(
      "remove_process_set", [](int id) { remove_process_set(ProcessSet{id}); }, release(),
      py::arg("process_set_id"), "Removes a process set (collective).");
  m.def(
      "process_set_ranks", [](int id) { return process_set_ranks(ProcessSet{id}); },
      py::arg("process_set_id"));
  m.def(
      "barrier", [](const std::string& name, int set) { cohort::barrier(name, ProcessSet{set}); },
      release(), py::arg("name") = "cohort.barrier", py::arg("process_set_id") = 0);
  m.def("join", &cohort::join, release(), "Blocks until every rank has joined; the last joiner.");

  py::enum_<ReduceOp>(m, "ReduceOp")
      .value("SUM", ReduceOp::kSum)
      .value("AVERAGE", ReduceOp::kAverage)
      .value("MIN", ReduceOp::kMin)
      .value("MAX", ReduceOp::kMax)
      .value("PRODUCT", ReduceOp::kProduct);
}

}  // namespace detail
}  // namespace cohort::python

PYBIND11_MODULE(_C, m) {
  namespace cp = cohort::python::detail;
  m.doc() = "Cohort's runtime for Python (use cohort.torch).";
  cp::make_errors(m);
  pybind11::register_exception_translator(&cp::translate);
  cp::bind_basics(m);
  cohort::python::bind_collectives(m);
  cohort::python::bind_elastic(m);
  cohort::python::bind_sharded(m);
}
