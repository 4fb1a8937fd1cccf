// Sharded values for Python (cohort.torch.ZeroRedundancyOptimizer): an elastic::State sharded
// value whose elements live in memory that Python owns (a CPU torch tensor), reached through two
// Python callables, and shard_range, the rule that says which rank holds which elements.
//
// The State asks for this rank's bytes (view) when it commits, restores or reshards, and tells the
// owner its new range (assign) when a sync reshards; view must then return memory for the new
// range, which the State fills. The callables run with the GIL taken again (the State's calls
// release it), on the thread that called commit, restore or sync.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "cohort/elastic/sharded.h"
#include "cohort/elastic/state.h"
#include "cohort/errors.h"
#include "cohort/types.h"
#include "common.h"

namespace cohort::python {

namespace {

using elastic::ShardRange;
using elastic::State;

DataType data_type_named(const std::string& name) {
  for (int i = 0; i < kNumDataTypes; ++i) {
    auto dtype = static_cast<DataType>(i);
    if (to_string(dtype) == name) return dtype;
  }
  throw InvalidArgument("ShardStorage: '" + name + "' is not a data type Cohort knows");
}

// The elements of one sharded value, in memory Python keeps: view() -> (address, bytes) of this
// rank's elements, assign(begin, end) makes it hold [begin, end) (new memory, filled by the State).
class PyShardStorage : public elastic::detail::ShardStorage {
 public:
  PyShardStorage(const std::string& dtype, uint64_t length, py::object view, py::object assign)
      : dtype_(data_type_named(dtype)),
        length_(length),
        view_(share(std::move(view))),
        assign_(share(std::move(assign))) {
    if (length == 0) throw InvalidArgument("ShardStorage: a sharded value needs elements");
    range_ = elastic::shard_range(length, cohort::rank(), cohort::size());
  }

  DataType dtype() const override { return dtype_; }
  uint64_t length() const override { return length_; }
  ShardRange range() const override { return range_; }

  std::span<std::byte> bytes() override {
    auto [address, size] = with_gil([&] {
      auto out = (*view_)().cast<std::pair<uintptr_t, uint64_t>>();
      return out;
    });
    uint64_t want = range_.size() * element_size(dtype_);
    if (size != want || (address == 0 && want != 0)) {
      throw InternalError("ShardStorage: the view of elements [" + std::to_string(range_.begin) +
                          ", " + std::to_string(range_.end) + ") has " + std::to_string(size) +
                          " bytes, not " + std::to_string(want));
    }
    return {reinterpret_cast<std::byte*>(address), static_cast<size_t>(size)};
  }

  void assign(ShardRange range) override {
    with_gil([&] { (*assign_)(range.begin, range.end); });
    range_ = range;
  }

 private:
  DataType dtype_;
  uint64_t length_;
  ShardRange range_;
  SharedObject view_;
  SharedObject assign_;
};

}  // namespace

void bind_sharded(py::module_& m) {
  py::class_<PyShardStorage>(m, "ShardStorage",
                             "A sharded value's elements in memory Python keeps (see sharded.cc).")
      .def(py::init<const std::string&, uint64_t, py::object, py::object>(), py::arg("dtype"),
           py::arg("length"), py::arg("view"), py::arg("assign"))
      .def_property_readonly("length", &PyShardStorage::length)
      .def_property_readonly("range", [](const PyShardStorage& s) {
        return py::make_tuple(s.range().begin, s.range().end);
      });
  m.def(
      "track_sharded",
      [](State& state, std::string name, PyShardStorage& storage) {
        state.track(std::move(name), storage);
      },
      py::arg("state"), py::arg("name"), py::arg("storage"), py::keep_alive<1, 3>(),
      "Tracks a sharded value in a State (committed with replicas, resharded by sync).");
  m.def(
      "shard_range",
      [](uint64_t length, int rank, int size) {
        ShardRange r = elastic::shard_range(length, rank, size);
        return py::make_tuple(r.begin, r.end);
      },
      py::arg("length"), py::arg("rank"), py::arg("size"),
      "Rank `rank`'s elements [begin, end) of `length` in a world of `size`.");
}

}  // namespace cohort::python
