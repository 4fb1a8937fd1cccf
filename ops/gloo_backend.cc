#include "ops/gloo_backend.h"

#include <gloo/allgatherv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "cohort/errors.h"
#include "ops/gloo_algorithm_cache.h"
#include "ops/gloo_allreduce.h"

namespace cohort::ops {
namespace {

class GlooBackend final : public Backend {
 public:
  GlooBackend(const GlooBackendOptions& options, gloo::rendezvous::Store& store)
      : rank_(options.rank), size_(options.size) {
    if (size_ < 1 || rank_ < 0 || rank_ >= size_) {
      throw InvalidArgument("Gloo backend: rank " + std::to_string(rank_) + " of size " +
                            std::to_string(size_) + " is out of range");
    }
    guard("connect", [&] {
      gloo::transport::tcp::attr attr;
      attr.hostname = options.hostname;
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
      context->setTimeout(options.timeout);
      gloo::rendezvous::PrefixStore prefixed(options.prefix, store);
      context->connectFullMesh(prefixed, device);
      context_ = context;
    });
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
    guard("allreduce", [&] {
      if (algorithm == GlooAllreduceAlgorithm::kRing) {
        run_gloo_ring_allreduce(context_, buffer, count, dtype, op, next_tag());
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
    if (root < 0 || root >= size_) {
      throw InvalidArgument("Gloo broadcast: root " + std::to_string(root) + " is not a rank");
    }
    if (bytes == 0 || size_ == 1) return;
    guard("broadcast", [&] {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(static_cast<uint8_t*>(buffer), bytes);
      opts.setRoot(root);
      opts.setTag(next_tag());
      gloo::broadcast(opts);
    });
  }

  void allgatherv(const void* input, void* output, std::span<const size_t> counts) override {
    if (counts.size() != static_cast<size_t>(size_)) {
      throw InvalidArgument("Gloo allgatherv: " + std::to_string(counts.size()) + " counts for " +
                            std::to_string(size_) + " ranks");
    }
    size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    if (total == 0) return;
    if (size_ == 1) {
      std::memcpy(output, input, total);
      return;
    }
    guard("allgatherv", [&] {
      gloo::AllgathervOptions opts(context_);
      // Gloo only reads the input, but its setter takes a mutable pointer.
      opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(input)), counts[rank_]);
      opts.setOutput(static_cast<uint8_t*>(output),
                     std::vector<size_t>(counts.begin(), counts.end()));
      opts.setTag(next_tag());
      gloo::allgatherv(opts);
    });
  }

  void barrier() override {
    if (size_ == 1) return;
    guard("barrier", [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTag(next_tag());
      gloo::barrier(opts);
    });
  }

 private:
  // Every Gloo failure becomes an InternalError that names the backend, operation and rank.
  template <typename F>
  void guard(const char* what, F&& body) {
    try {
      body();
    } catch (const gloo::Exception& e) {
      fail(what, e.what());
    } catch (const gloo::EnforceNotMet& e) {
      fail(what, e.what());
    }
  }

  [[noreturn]] void fail(const char* what, const char* why) const {
    throw InternalError(std::string("Gloo ") + what + " failed on rank " + std::to_string(rank_) +
                        " of " + std::to_string(size_) + ": " + why);
  }

  // New-API collectives find their messages by tag; consecutive operations must not share one,
  // and every rank advances the counter in the same order.
  uint32_t next_tag() { return tag_++; }

  int rank_;
  int size_;
  std::shared_ptr<gloo::Context> context_;
  GlooAlgorithmCache cache_;
  uint32_t tag_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_gloo_backend(const GlooBackendOptions& options,
                                           gloo::rendezvous::Store& store) {
  return std::make_unique<GlooBackend>(options, store);
}

}  // namespace cohort::ops
