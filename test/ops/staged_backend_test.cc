// The staged device backend (ops/staged_backend.h) without a GPU: its "device" is plain memory and
// its copies run on the host copier's thread (host_copier.h), lazily, so that a wait the pipeline
// forgot leaves a copy pending where the checks below see it. Over Gloo with 2 and 3 ranks as
// threads of one process: every backend check against the host results, chunk boundaries, the
// scaled sums, the order of copies around each host collective, splits, a failing host collective
// and abort().
#include <gloo/rendezvous/hash_store.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backend_checks.h"
#include "cohort/errors.h"
#include "collective_matrix.h"
#include "gloo_ranks.h"
#include "host_copier.h"
#include "ops/gloo_backend.h"
#include "ops/half.h"
#include "ops/lone_backend.h"
#include "ops/staged_backend.h"

using namespace cohort;
using namespace cohort::ops;
using namespace cohort::ops::testing;

namespace {

// The host backend as the staged backend sees it, checked: no copy may still read or write a
// buffer while a host collective works on it (before it starts or once it returns), and the
// `fail_at`th collective (from 1) throws InternalError.
class Watched final : public Backend {
 public:
  Watched(Backend& inner, HostCopier& copier, int fail_at = 0)
      : inner_(inner), copier_(copier), fail_at_(fail_at) {}
  std::string_view name() const override { return inner_.name(); }
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  int calls() const { return calls_; }

  void allreduce(void* b, size_t n, DataType d, ReduceOp op, const BufferBinding& k) override {
    around({b, n * element_size(d)}, {}, [&] { inner_.allreduce(b, n, d, op, k); });
  }
  void broadcast(void* b, size_t bytes, int root) override {
    around({b, bytes}, {}, [&] { inner_.broadcast(b, bytes, root); });
  }
  void allgatherv(const void* in, void* out, std::span<const size_t> counts) override {
    around({in, counts[rank()]}, {out, sum(counts)}, [&] { inner_.allgatherv(in, out, counts); });
  }
  void barrier() override { inner_.barrier(); }
  void alltoallv(const void* in, std::span<const size_t> sends, void* out,
                 std::span<const size_t> receives) override {
    around({in, sum(sends)}, {out, sum(receives)},
           [&] { inner_.alltoallv(in, sends, out, receives); });
  }
  void reduce_scatter(const void* in, void* out, std::span<const size_t> counts, DataType d,
                      ReduceOp op) override {
    size_t e = element_size(d);
    around({in, sum(counts) * e}, {out, counts[rank()] * e},
           [&] { inner_.reduce_scatter(in, out, counts, d, op); });
  }
  std::unique_ptr<Backend> split(std::span<const int> ranks, const std::string& key) override {
    return inner_.split(ranks, key);
  }

 private:
  struct Range {
    const void* p = nullptr;
    size_t bytes = 0;
  };
  static size_t sum(std::span<const size_t> c) {
    return std::accumulate(c.begin(), c.end(), size_t{0});
  }

  template <typename F>
  void around(Range a, Range b, F&& f) {
    ++calls_;
    check(a, b, "before");
    if (calls_ == fail_at_) throw InternalError("injected failure of host collective");
    f();
    check(a, b, "after");
  }
  void check(Range a, Range b, const char* when) {
    bool busy = copier_.busy(a.p, a.bytes) || (b.bytes > 0 && copier_.busy(b.p, b.bytes));
    ensure(!busy, std::string("a copy touches host collective ") + std::to_string(calls_) +
                      "'s buffers " + when + " it runs");
  }

  Backend& inner_;
  HostCopier& copier_;
  int fail_at_;
  int calls_ = 0;
};

// The staged backend over `host`, watched, with a lazy host copier.
struct Staged {
  Staged(Backend& host, size_t chunk_bytes, int fail_at = 0)
      : copier(new HostCopier(/*lazy=*/true)),
        watched(host, *copier, fail_at),
        backend(make_staged_backend(watched, std::unique_ptr<DeviceCopier>(copier), chunk_bytes)) {}
  HostCopier* copier;  // owned by backend
  Watched watched;
  std::unique_ptr<DeviceBackend> backend;
};

void check_all(int size, size_t chunk_bytes) {
  on_ranks(size, [&](Backend& gloo) {
    Staged s(gloo, chunk_bytes);
    BackendChecks checks(*s.backend);
    checks.run_all();
    ensure(checks.failures() == 0, std::to_string(checks.failures()) + " checks failed");
    ensure(s.copier->in_flight() == 0, "copies left in flight");
  });
}

}  // namespace

TEST_CASE("staged backend passes every backend check over Gloo, 2 ranks, 4 KiB chunks") {
  check_all(2, 4096);
}
TEST_CASE("staged backend passes every backend check over Gloo, 3 ranks, 4 MiB chunks") {
  check_all(3, size_t{4} << 20);
}

TEST_CASE("staged allreduce at chunk boundaries: zero, one, fewer and not a multiple") {
  on_ranks(2, [](Backend& gloo) {
    for (size_t chunk : {size_t{8}, size_t{24}, size_t{64}}) {
      Staged s(gloo, chunk);
      std::string error = check_allreduce_matrix(*s.backend, {0, 1, 2, 3, 7, 8, 9, 33, 64, 65});
      ensure(error.empty(), "chunk " + std::to_string(chunk) + ": " + error);
      // A broadcast of 1000 bytes in steps of `chunk`.
      std::vector<uint8_t> data(1000);
      for (size_t i = 0; i < data.size(); ++i) data[i] = gloo.rank() == 1 ? i % 251 : 0;
      s.backend->broadcast(data.data(), data.size(), 1);
      for (size_t i = 0; i < data.size(); ++i) ensure(data[i] == i % 251, "broadcast byte");
    }
  });
}

TEST_CASE("staged allreduce pipelines: host collectives per chunk, staging of two slots") {
  on_ranks(2, [](Backend& gloo) {
    Staged s(gloo, 64);
    std::vector<float> data(100, 1.0f);  // 400 bytes: 7 chunks of 16 floats (the last of 4)
    s.backend->allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum, {"x", true});
    ensure(s.watched.calls() == 7, "7 host allreduces, not " + std::to_string(s.watched.calls()));
    ensure(data[0] == 2.0f && data[99] == 2.0f, "allreduce result");
    ensure(s.copier->host_allocations() == 1, "one staging allocation for both slots");
  });
}

TEST_CASE("staged scaled sums add on the host then scale, for floating types only") {
  on_ranks(3, [](Backend& gloo) {
    Staged s(gloo, 16);
    float r = static_cast<float>(gloo.rank() + 1);  // 1, 2, 3: the sum is 6
    std::vector<float> f(9, r);
    s.backend->allreduce_scaled(f.data(), f.size(), DataType::kFloat32, 0.5);
    ensure(f[0] == 3.0f && f[8] == 3.0f, "float32 allreduce_scaled");
    std::vector<double> d(5, r);
    s.backend->allreduce_scaled(d.data(), d.size(), DataType::kFloat64, 0.25);
    ensure(d[4] == 1.5, "float64 allreduce_scaled");
    std::vector<uint16_t> h(11, float_to_float16(r)), b(11, float_to_bfloat16(r));
    s.backend->allreduce_scaled(h.data(), h.size(), DataType::kFloat16, 1.0 / 3);
    s.backend->allreduce_scaled(b.data(), b.size(), DataType::kBFloat16, 2.0);
    ensure(float16_to_float(h[10]) == 2.0f, "float16 allreduce_scaled");
    ensure(bfloat16_to_float(b[10]) == 12.0f, "bfloat16 allreduce_scaled");
    std::vector<size_t> counts = {2, 0, 3};
    std::vector<float> in(5, r), out(3, -1);
    s.backend->reduce_scatter_scaled(in.data(), out.data(), counts, DataType::kFloat32, 2.0);
    for (size_t i = 0; i < counts[gloo.rank()]; ++i) ensure(out[i] == 12.0f, "reduce_scatter");
    std::vector<int32_t> ints(4, 1);
    for (DataType t : {DataType::kInt32, DataType::kUInt8, DataType::kBool}) {
      try {
        s.backend->allreduce_scaled(ints.data(), 1, t, 2.0);
        ensure(false, "a scaled sum of integers was accepted");
      } catch (const InvalidArgument& e) {
        ensure(std::string(e.what()).find("floating-point") != std::string::npos, e.what());
      }
    }
    ensure(s.watched.calls() == 3 + 3 + 2 + 2 + 1, "no host collective for a refused call");
  });
}

TEST_CASE("a failing host collective is the typed error with no copy left in flight") {
  LoneBackend lone;
  for (int fail_at : {1, 3, 7}) {
    Staged s(lone, 64, fail_at);
    std::vector<float> data(100, 1.0f);
    CHECK_THROWS_AS(s.backend->allreduce(data.data(), data.size(), DataType::kFloat32,
                                         ReduceOp::kSum, {"x", true}),
                    InternalError);
    CHECK(s.copier->in_flight() == 0);
  }
  Staged s(lone, 64, 1);
  std::vector<float> in(4), out(4);
  std::vector<size_t> counts = {4};
  CHECK_THROWS_AS(s.backend->alltoallv(in.data(), counts, out.data(), counts), InternalError);
  CHECK(s.copier->in_flight() == 0);
  // The backend still works afterwards: the failure was the host collective's, not its own.
  s.backend->allgatherv(in.data(), out.data(), counts);
}

TEST_CASE("staged backend: abort fails later calls naming the reason, staging freed with it") {
  LoneBackend lone;
  auto* copier = new HostCopier();
  auto backend = make_staged_backend(lone, std::unique_ptr<DeviceCopier>(copier), 64);
  std::vector<float> data(100, 1.0f);
  backend->allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum, {"x", true});
  std::vector<size_t> counts = {400};
  std::vector<float> out(100);
  backend->allgatherv(data.data(), out.data(), counts);
  auto memory = backend->allocate(128);
  CHECK(memory != nullptr);
  CHECK(backend->allocate(0) == nullptr);
  CHECK(copier->live() == 3);  // the slots, the whole-operation staging, `memory`
  backend->abort("a peer died");
  CHECK_THROWS_WITH(backend->barrier(), Catch::Contains("a peer died"));
  CHECK_THROWS_AS(
      backend->allreduce(data.data(), 1, DataType::kFloat32, ReduceOp::kSum, {"x", true}),
      InternalError);
  CHECK(backend->name() == "staged");
  CHECK(backend->device() == 0);
  std::shared_ptr<const int> live = copier->live_counter();
  backend.reset();
  CHECK(*live == 1);  // only `memory`, which outlives the backend
  memory.reset();
  CHECK(*live == 0);
}

TEST_CASE("staged split: a backend of its own over a split of the host backend") {
  on_ranks(3, [](Backend& gloo) {
    Staged s(gloo, 32);
    if (gloo.rank() == 0) return;
    std::vector<int> tail = {1, 2};
    auto sub = s.backend->split(tail, "tail");
    ensure(sub->name() == "staged" && sub->size() == 2 && sub->rank() == gloo.rank() - 1,
           "split numbering");
    std::string error = check_allreduce_matrix(*sub, {1, 33});
    ensure(error.empty(), error);
  });
}
