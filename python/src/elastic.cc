// Elastic training for Python: elastic::State with values saved and parsed by Python callables
// (track_bytes) and the C++ ElasticSampler, elastic::run over a Python function, and the host
// update check. The GIL is released while C++ runs collectives (commit, sync, run's reset and
// sync) and taken again in every Python callback, so a callback may run on whichever thread C++
// calls it from.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/elastic/run.h"
#include "cohort/elastic/sampler.h"
#include "cohort/elastic/state.h"
#include "common.h"

namespace cohort::python {

namespace {

using elastic::ElasticSampler;
using elastic::State;

// save() -> bytes, and parse(bytes) -> apply(), as State::track_bytes wants them, over Python
// callables; the parsed value stays in the Python closure that parse returns.
void track_bytes(State& state, std::string name, std::string type_tag, py::object save,
                 py::object parse, bool same_on_every_rank) {
  SharedObject save_fn = share(std::move(save));
  SharedObject parse_fn = share(std::move(parse));
  state.track_bytes(
      std::move(name), std::move(type_tag),
      [save_fn] { return with_gil([&] { return (*save_fn)().cast<std::string>(); }); },
      [parse_fn](std::string_view bytes) -> std::function<void()> {
        SharedObject apply =
            with_gil([&] { return share((*parse_fn)(py::bytes(bytes.data(), bytes.size()))); });
        return [apply] { with_gil([&] { (*apply)(); }); };
      },
      same_on_every_rank ? elastic::ValueScope::kSameOnEveryRank : elastic::ValueScope::kPerRank);
}

// This rank's unprocessed samples of the current partition, in the epoch's order (one batch the
// size of the data set holds all of them).
std::vector<uint64_t> unprocessed_indices(const ElasticSampler& sampler) {
  std::vector<uint64_t> indices;
  for (const auto& batch : sampler.batches(sampler.dataset_size())) {
    indices.insert(indices.end(), batch.begin(), batch.end());
  }
  return indices;
}

std::vector<std::vector<uint64_t>> all_batches(const ElasticSampler& sampler, uint64_t size) {
  std::vector<std::vector<uint64_t>> batches;
  for (const auto& batch : sampler.batches(size)) batches.push_back(batch);
  return batches;
}

void bind_state(py::module_& m) {
  using release = py::call_guard<py::gil_scoped_release>;
  py::class_<State>(m, "State", "cohort::elastic::State: named values that survive a failure.")
      .def(py::init<std::string>(), py::arg("label") = "state")
      .def("track_bytes", &track_bytes, py::arg("name"), py::arg("type_tag"), py::arg("save"),
           py::arg("parse"), py::arg("same_on_every_rank") = false,
           "Tracks a value through save() -> bytes and parse(bytes) -> apply (a callable that "
           "moves the parsed value in; parse must raise, changing nothing, on bad bytes). "
           "same_on_every_rank: ranks at the same commit hold the same value, so a sync after "
           "every rank restored that commit leaves it as each rank holds it (ValueScope).")
      .def(
          "track_sampler",
          [](State& s, std::string name, ElasticSampler& sampler) {
            s.track(std::move(name), sampler);
          },
          py::arg("name"), py::arg("sampler"), py::keep_alive<1, 3>(),
          "Tracks an ElasticSampler: processed samples merged at commit.")
      .def("commit", &State::commit, release())
      .def("restore", &State::restore, release())
      .def("sync", &State::sync, release())
      .def(
          "add_reset_callback",
          [](State& s, py::object callback) {
            SharedObject fn = share(std::move(callback));
            s.add_reset_callback([fn] { with_gil([&] { (*fn)(); }); });
          },
          py::arg("callback"))
      .def("run_reset_callbacks", &State::run_reset_callbacks, release())
      .def_property_readonly("label", &State::label)
      .def_property_readonly("commit_count", &State::commit_count)
      .def("has_commit", &State::has_commit)
      .def("last_reshard_bytes", &State::last_reshard_bytes)
      .def("last_sync_kept", &State::last_sync_kept)
      .def("names", &State::names);
}

void bind_sampler(py::module_& m) {
  py::class_<ElasticSampler>(m, "ElasticSampler",
                             "cohort::elastic::ElasticSampler: the exactly-once sampler.")
      .def(py::init<uint64_t, uint64_t>(), py::arg("dataset_size"), py::arg("seed"))
      .def_property_readonly("dataset_size", &ElasticSampler::dataset_size)
      .def_property_readonly("seed", &ElasticSampler::seed)
      .def_property_readonly("epoch", &ElasticSampler::epoch)
      .def_property_readonly("rank", &ElasticSampler::rank)
      .def_property_readonly("world_size", &ElasticSampler::world_size)
      .def("set_epoch", &ElasticSampler::set_epoch, py::arg("epoch"))
      .def("steps", &ElasticSampler::steps, py::arg("batch_size"))
      .def(
          "record",
          [](ElasticSampler& s, const std::vector<uint64_t>& samples) { s.record(samples); },
          py::arg("samples"))
      .def("remaining", &ElasticSampler::remaining)
      .def("unprocessed", &ElasticSampler::unprocessed)
      .def("uncommitted", &ElasticSampler::uncommitted)
      .def("is_committed", &ElasticSampler::is_committed, py::arg("sample"))
      .def("unprocessed_indices", &unprocessed_indices,
           "This rank's samples not recorded yet, in the epoch's order.")
      .def("batches", &all_batches, py::arg("batch_size"),
           "This rank's unprocessed samples in steps(batch_size) lists (some may be empty).");
}

// The phases of the last reset; durations in seconds, as Python measures time.
void bind_reset_timings(py::module_& m) {
  using elastic::ResetTimings;
  auto seconds = [](std::chrono::microseconds ResetTimings::*phase) {
    return
        [phase](const ResetTimings& t) { return std::chrono::duration<double>(t.*phase).count(); };
  };
  py::class_<ResetTimings>(m, "ResetTimings")
      .def_readonly("round", &ResetTimings::round)
      .def_readonly("old_rank", &ResetTimings::old_rank)
      .def_readonly("old_size", &ResetTimings::old_size)
      .def_readonly("new_rank", &ResetTimings::new_rank)
      .def_readonly("new_size", &ResetTimings::new_size)
      .def_property_readonly("teardown", seconds(&ResetTimings::teardown))
      .def_property_readonly("assignment", seconds(&ResetTimings::assignment))
      .def_property_readonly("connect", seconds(&ResetTimings::connect));
  m.def("last_reset_timings", &elastic::last_reset_timings);
}

void bind_run(py::module_& m) {
  using release = py::call_guard<py::gil_scoped_release>;
  m.def(
      "run",
      [](State& state, py::object fn) {
        SharedObject body = share(std::move(fn));
        py::gil_scoped_release unlocked;
        elastic::run(state, [body](State&) { with_gil([&] { (*body)(); }); });
      },
      py::arg("state"), py::arg("fn"),
      "elastic::run(state, fn): syncs, then calls fn() until it returns, resetting on "
      "InternalError and HostsUpdatedInterrupt.");
  m.def("check_host_updates", &elastic::check_host_updates, release());
  m.def("is_elastic", &elastic::is_elastic);
  m.def("resets", &elastic::resets);
  m.def("request_drain", &elastic::request_drain);
  m.def("drain_requested", &elastic::drain_requested);
  bind_reset_timings(m);
}

}  // namespace

void bind_elastic(py::module_& m) {
  bind_state(m);
  bind_sampler(m);
  bind_run(m);
}

}  // namespace cohort::python
