#include "ops/gloo_backend.h"

#include <gloo/allgatherv.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "cohort/errors.h"
#include "ops/backend_args.h"
#include "ops/gloo_algorithm_cache.h"
#include "ops/gloo_allreduce.h"
#include "ops/gloo_connect.h"
#include "ops/gloo_guard.h"
#include "ops/gloo_interrupt.h"
#include "ops/gloo_reduce_scatter.h"
#include "ops/gloo_send_buffers.h"
#include "ops/gloo_split.h"
#include "ops/gloo_wait_breaker.h"

namespace cohort::ops {
namespace {

// Gloo's barrier makes its own unbound buffer; a subclass can reach it to watch it, and lets go of
// it before the base class frees it.
class WatchedBarrierOptions : public gloo::BarrierOptions {
 public:
  WatchedBarrierOptions(const std::shared_ptr<gloo::Context>& of,
                        GlooWaitBreaker::InFlight& in_flight)
      : gloo::BarrierOptions(of), watch_(in_flight, {buffer.get()}) {}

 private:
  GlooWaitBreaker::Watch watch_;
};

class GlooBackend final : public Backend {
 public:
  explicit GlooBackend(std::shared_ptr<gloo::Context> context)
      : rank_(context->rank),
        size_(context->size),
        context_(std::move(context)),
        interrupter_(*context_) {
    gloo_guard("connect", rank_, size_, [&] { size_gloo_send_buffers(*context_); });
  }

  std::string_view name() const override { return "gloo"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce(void* buffer, size_t count, DataType dtype, ReduceOp op,
                 const BufferBinding& binding) override {
    if (op == ReduceOp::kAverage) {
      throw InvalidArgument("Gloo allreduce: average is a sum followed by a scale");
    }
    if (count == 0 || size_ == 1) return;
    size_t bytes = count * element_size(dtype);
    auto algorithm = choose_gloo_allreduce(count, bytes, size_);
    guard("allreduce", [&](GlooWaitBreaker::InFlight& in_flight) {
      if (algorithm == GlooAllreduceAlgorithm::kRing) {
        run_gloo_ring_allreduce(context_, buffer, count, dtype, op, next_tag(), in_flight);
        return;
      }
      int kind =
          (static_cast<int>(algorithm) * kNumDataTypes + static_cast<int>(dtype)) * kNumReduceOps +
          static_cast<int>(op);
      cache_
          .get({binding.key, kind, count}, buffer, binding.rebind, bytes,
               [&] { return make_gloo_allreduce(algorithm, context_, buffer, count, dtype, op); })
          .run();
    });
  }

  void broadcast(void* buffer, size_t bytes, int root) override {
    check_root("Gloo broadcast", root, size_);
    if (bytes == 0 || size_ == 1) return;
    guard("broadcast", [&](GlooWaitBreaker::InFlight& in_flight) {
      gloo::BroadcastOptions opts(context_);
      auto data = context_->createUnboundBuffer(buffer, bytes);
      GlooWaitBreaker::Watch watch(in_flight, {data.get()});
      opts.setOutput<uint8_t>(std::move(data));
      opts.setRoot(root);
      opts.setTag(next_tag());
      gloo::broadcast(opts);
    });
  }

  void allgatherv(const void* input, void* output, std::span<const size_t> counts) override {
    check_rank_counts("Gloo allgatherv", counts, size_);
    size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    if (total == 0) return;
    if (size_ == 1) {
      std::memcpy(output, input, total);
      return;
    }
    guard("allgatherv", [&](GlooWaitBreaker::InFlight& in_flight) {
      gloo::AllgathervOptions opts(context_);
      // Gloo only reads the input, but its buffers take mutable pointers.
      auto in = context_->createUnboundBuffer(const_cast<void*>(input), counts[rank_]);
      auto out = context_->createUnboundBuffer(output, total);
      GlooWaitBreaker::Watch watch(in_flight, {in.get(), out.get()});
      opts.setInput<uint8_t>(std::move(in));
      opts.setOutput<uint8_t>(std::move(out), std::vector<size_t>(counts.begin(), counts.end()));
      opts.setTag(next_tag());
      gloo::allgatherv(opts);
    });
  }

  void barrier() override {
    if (size_ == 1) return;
    guard("barrier", [&](GlooWaitBreaker::InFlight& in_flight) {
      WatchedBarrierOptions opts(context_, in_flight);
      opts.setTag(next_tag());
      gloo::barrier(opts);
    });
  }

  void alltoallv(const void* input, std::span<const size_t> send_counts, void* output,
                 std::span<const size_t> recv_counts) override {
    check_alltoallv("Gloo alltoallv", send_counts, recv_counts, rank_, size_);
    size_t sent = std::accumulate(send_counts.begin(), send_counts.end(), size_t{0});
    size_t received = std::accumulate(recv_counts.begin(), recv_counts.end(), size_t{0});
    check_disjoint("Gloo alltoallv", input, sent, output, received);
    if (size_ == 1) {
      if (sent > 0) std::memcpy(output, input, sent);
      return;
    }
    // Even a rank with nothing to move takes part: its peers post (empty) transfers to it.
    guard("alltoallv", [&](GlooWaitBreaker::InFlight& in_flight) {
      gloo::AlltoallvOptions opts(context_);
      // Gloo only reads the input, but its buffers take mutable pointers.
      auto in = context_->createUnboundBuffer(const_cast<void*>(input), sent);
      auto out = context_->createUnboundBuffer(output, received);
      GlooWaitBreaker::Watch watch(in_flight, {in.get(), out.get()});
      opts.setInput<uint8_t>(std::move(in),
                             std::vector<int64_t>(send_counts.begin(), send_counts.end()));
      opts.setOutput<uint8_t>(std::move(out),
                              std::vector<int64_t>(recv_counts.begin(), recv_counts.end()));
      opts.setTag(next_tag());
      gloo::alltoallv(opts);
    });
  }

  void reduce_scatter(const void* input, void* output, std::span<const size_t> counts,
                      DataType dtype, ReduceOp op) override {
    size_t offset =
        check_reduce_scatter("Gloo reduce_scatter", input, output, counts, dtype, op, rank_, size_);
    size_t element = element_size(dtype);
    size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    if (total == 0) return;  // every rank passes the same counts, so every rank returns here
    if (size_ == 1) {
      std::memcpy(output, input, total * element);
      return;
    }
    if (!gloo_reduce_scatter_uses_ring(total * element, size_)) {
      reduce_scatter_by_allreduce(input, output, total, offset, counts[rank_], dtype, op);
      return;
    }
    guard("reduce_scatter", [&](GlooWaitBreaker::InFlight& in_flight) {
      run_gloo_ring_reduce_scatter(context_, input, output, counts, dtype, op, next_tag(),
                                   ring_scratch_, in_flight);
    });
  }

  std::unique_ptr<Backend> split(std::span<const int> ranks, const std::string& key) override {
    check_split("Gloo split", ranks, rank_, size_);
    std::shared_ptr<gloo::Context> subgroup;
    guard("split", [&](GlooWaitBreaker::InFlight&) {
      subgroup = connect_gloo_subgroup(context_, ranks, key);
    });
    return std::make_unique<GlooBackend>(std::move(subgroup));
  }

  void abort(const std::string& reason) override {
    {
      MutexLock lock(abort_mutex_);
      if (aborted_) return;
      abort_reason_ = reason;
      aborted_ = true;
    }
    interrupter_.interrupt();
    breaker_.break_waits();
  }

 private:
  // Runs `body(in_flight)`, a collective whose unbound buffers it registers with `in_flight`.
  template <typename F>
  void guard(const char* what, F&& body) {
    GlooWaitBreaker::InFlight in_flight(breaker_);
    throw_if_aborted(what);
    try {
      gloo_guard(what, rank_, size_, [&] { body(in_flight); });
    } catch (const InternalError&) {
      // After abort() the sockets it shut down are what failed: report why they were shut down.
      throw_if_aborted(what);
      throw;
    }
    // A collective whose waits the breaker ended returns as if it had finished.
    throw_if_aborted(what);
  }

  void throw_if_aborted(const char* what) {
    if (!aborted_) return;
    MutexLock lock(abort_mutex_);
    throw InternalError(std::string("Gloo ") + what + " on rank " + std::to_string(rank_) + " of " +
                        std::to_string(size_) + " interrupted: " + abort_reason_);
  }

  // New-API collectives find their messages by tag; consecutive operations must not share one,
  // and every rank advances the counter in the same order.
  uint32_t next_tag() { return tag_++; }

  // Small reduce-scatters allreduce a copy of the whole input with the cached halving-doubling
  // and keep this rank's block (see gloo_reduce_scatter_uses_ring). The copy lives in a buffer
  // that grows by the same steps on every rank; each growth starts a new binding, so every rank
  // rebuilds its cached algorithms together and none is left bound to freed memory.
  void reduce_scatter_by_allreduce(const void* input, void* output, size_t total, size_t offset,
                                   size_t count, DataType dtype, ReduceOp op) {
    size_t element = element_size(dtype);
    if (allreduce_scratch_.size() < total * element) {
      allreduce_scratch_.resize(std::max(total * element, 2 * allreduce_scratch_.size()));
      ++allreduce_scratch_generation_;
    }
    std::memcpy(allreduce_scratch_.data(), input, total * element);
    allreduce(allreduce_scratch_.data(), total, dtype, op,
              {"cohort.reduce_scatter." + std::to_string(allreduce_scratch_generation_), false});
    if (count > 0)
      std::memcpy(output, allreduce_scratch_.data() + offset * element, count * element);
  }

  int rank_;
  int size_;
  std::shared_ptr<gloo::Context> context_;
  GlooAlgorithmCache cache_;
  uint32_t tag_ = 0;
  std::vector<std::byte> ring_scratch_;       // blocks in flight in the reduce-scatter ring
  std::vector<std::byte> allreduce_scratch_;  // small reduce-scatters (see above)
  uint64_t allreduce_scratch_generation_ = 0;
  GlooInterrupter interrupter_;  // after context_: made from it
  GlooWaitBreaker breaker_;
  Mutex abort_mutex_;
  std::string abort_reason_ GUARDED_BY(abort_mutex_);
  std::atomic<bool> aborted_{false};
};

}  // namespace

std::unique_ptr<Backend> make_gloo_backend(const GlooBackendOptions& options,
                                           gloo::rendezvous::Store& store) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    throw InvalidArgument("Gloo backend: rank " + std::to_string(options.rank) + " of size " +
                          std::to_string(options.size) + " is out of range");
  }
  return std::make_unique<GlooBackend>(connect_full_mesh(options, store));
}

std::unique_ptr<Backend> make_gloo_backend(const GlooBackendOptions& options, Backend& bootstrap) {
  std::shared_ptr<gloo::Context> context;
  gloo_guard("connect", bootstrap.rank(), bootstrap.size(),
             [&] { context = connect_gloo_through(bootstrap, options.hostname, options.timeout); });
  return std::make_unique<GlooBackend>(std::move(context));
}

}  // namespace cohort::ops
