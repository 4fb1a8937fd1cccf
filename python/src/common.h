// Shared by the binding's translation units: the Python exception classes, how Python callbacks
// are held and called from C++ threads that do not hold the GIL, and how a Python exception raised
// inside such a callback crosses back through C++ (elastic::run must see InternalError and
// HostsUpdatedInterrupt; any other exception must reach the caller as the original object).
#pragma once

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>

#include "cohort/elastic/run.h"
#include "cohort/errors.h"

namespace cohort::python {

namespace py = pybind11;

// The Python classes of Cohort's errors, made once by the module (module.cc) and never freed.
struct ErrorClasses {
  py::handle error;            // CohortError(RuntimeError)
  py::handle invalid;          // InvalidArgument(CohortError, ValueError)
  py::handle not_initialized;  // NotInitialized(CohortError)
  py::handle mismatch;         // MismatchError(CohortError)
  py::handle internal;         // InternalError(CohortError), alias HorovodInternalError
  py::handle stall;            // StallError(CohortError)
  py::handle shutdown;         // ShutdownError(CohortError)
  py::handle checkpoint;       // CheckpointError(CohortError)
  py::handle unreachable;      // StoreUnreachable(CohortError)
  py::handle hosts_updated;    // HostsUpdatedInterrupt(CohortError)
};
ErrorClasses& error_classes();

// A Python exception kept, with its traceback, so that it can be raised again as the very same
// object once it has crossed C++. Dropping the last copy takes the GIL (pybind11's deleter).
class PythonOrigin {
 public:
  explicit PythonOrigin(py::error_already_set&& e)
      : error_(std::make_shared<py::error_already_set>(std::move(e))) {}
  // Makes the kept exception the current Python error; the GIL must be held.
  void restore() const { error_->restore(); }

 private:
  std::shared_ptr<py::error_already_set> error_;
};

// A Python InternalError (or HostsUpdatedInterrupt) raised inside a Python callback: it is the C++
// exception elastic::run recovers from, and becomes the original Python object again if it
// propagates back to Python.
class PyInternalError : public InternalError, public PythonOrigin {
 public:
  PyInternalError(const std::string& message, py::error_already_set&& e)
      : InternalError(message), PythonOrigin(std::move(e)) {}
};
class PyHostsUpdatedInterrupt : public elastic::HostsUpdatedInterrupt, public PythonOrigin {
 public:
  PyHostsUpdatedInterrupt(const std::string& message, py::error_already_set&& e)
      : HostsUpdatedInterrupt(message), PythonOrigin(std::move(e)) {}
};

// Rethrows a Python error caught in a callback (GIL held): Cohort's InternalError and
// HostsUpdatedInterrupt as their C++ types, anything else as it is (pybind11 raises the original
// object again when it reaches the binding's boundary).
[[noreturn]] void rethrow_python_error(py::error_already_set& e);

// A Python object that C++ may copy and drop without the GIL (e.g. inside a std::function kept by
// State): the last copy takes the GIL to release it.
using SharedObject = std::shared_ptr<py::object>;
inline SharedObject share(py::object object) {
  return SharedObject(new py::object(std::move(object)), [](py::object* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
}

// Calls `f` with the GIL held, translating a Python exception as rethrow_python_error() does.
template <typename F>
auto with_gil(F&& f) -> decltype(f()) {
  py::gil_scoped_acquire gil;
  try {
    return f();
  } catch (py::error_already_set& e) {
    rethrow_python_error(e);
  }
}

// Each translation unit binds its part of the module.
void bind_collectives(py::module_& m);
void bind_elastic(py::module_& m);
void bind_sharded(py::module_& m);

}  // namespace cohort::python
