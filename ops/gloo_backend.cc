#include "ops/gloo_backend.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "cohort/errors.h"
#include "ops/gloo_algorithm_cache.h"
#include "ops/reduce.h"

namespace cohort::ops {
namespace {

// Gloo's templates reduce through a function pointer; this one forwards to our kernels with the
// element type fixed at compile time (16-bit floats travel as uint16_t).
template <typename T, DataType D, ReduceOp Op>
void reduce_kernel(T* dst, const T* src, size_t n) {
  reduce_into(dst, src, n, D, Op);
}

template <typename T, DataType D, ReduceOp Op>
const gloo::ReductionFunction<T>* reduction() {
  static const gloo::ReductionFunction<T> fn(gloo::CUSTOM, &reduce_kernel<T, D, Op>);
  return &fn;
}

template <typename T, DataType D>
const gloo::ReductionFunction<T>* reduction_for(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return reduction<T, D, ReduceOp::kSum>();
    case ReduceOp::kMin:
      return reduction<T, D, ReduceOp::kMin>();
    case ReduceOp::kMax:
      return reduction<T, D, ReduceOp::kMax>();
    case ReduceOp::kProduct:
      return reduction<T, D, ReduceOp::kProduct>();
    case ReduceOp::kAverage:
      break;
  }
  throw InvalidArgument("the Gloo backend reduces with sum, min, max or product");
}

template <typename T, DataType D>
std::unique_ptr<gloo::Algorithm> halving_doubling(const std::shared_ptr<gloo::Context>& context,
                                                  void* buffer, size_t count, ReduceOp op) {
  return std::make_unique<gloo::AllreduceHalvingDoubling<T>>(
      context, std::vector<T*>{static_cast<T*>(buffer)}, static_cast<int>(count),
      reduction_for<T, D>(op));
}

std::unique_ptr<gloo::Algorithm> make_allreduce(const std::shared_ptr<gloo::Context>& context,
                                                void* buffer, size_t count, DataType dtype,
                                                ReduceOp op) {
  switch (dtype) {
    case DataType::kUInt8:
      return halving_doubling<uint8_t, DataType::kUInt8>(context, buffer, count, op);
    case DataType::kInt8:
      return halving_doubling<int8_t, DataType::kInt8>(context, buffer, count, op);
    case DataType::kInt32:
      return halving_doubling<int32_t, DataType::kInt32>(context, buffer, count, op);
    case DataType::kInt64:
      return halving_doubling<int64_t, DataType::kInt64>(context, buffer, count, op);
    case DataType::kFloat16:
      return halving_doubling<uint16_t, DataType::kFloat16>(context, buffer, count, op);
    case DataType::kBFloat16:
      return halving_doubling<uint16_t, DataType::kBFloat16>(context, buffer, count, op);
    case DataType::kFloat32:
      return halving_doubling<float, DataType::kFloat32>(context, buffer, count, op);
    case DataType::kFloat64:
      return halving_doubling<double, DataType::kFloat64>(context, buffer, count, op);
    case DataType::kBool:
      return halving_doubling<uint8_t, DataType::kBool>(context, buffer, count, op);
  }
  throw InvalidArgument("unknown data type");
}

class GlooBackend final : public Backend {
 public:
  GlooBackend(const GlooBackendOptions& options, gloo::rendezvous::Store& store)
      : rank_(options.rank), size_(options.size) {
    guard("connecting", [&] {
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
    if (count == 0 || size_ == 1) return;
    guard("allreduce", [&] {
      int kind = static_cast<int>(dtype) * kNumReduceOps + static_cast<int>(op);
      auto& algorithm =
          cache_.get({binding.key, kind, count}, binding.rebind, count * element_size(dtype),
                     [&] { return make_allreduce(context_, buffer, count, dtype, op); });
      algorithm.run();
    });
  }

  void broadcast(void* buffer, size_t bytes, int root) override {
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
    guard("allgatherv", [&] {
      gloo::AllgathervOptions opts(context_);
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
  // Every Gloo failure becomes an InternalError that says which operation failed.
  template <typename F>
  void guard(const char* what, F&& body) {
    try {
      body();
    } catch (const gloo::Exception& e) {
      throw InternalError(std::string("Gloo ") + what + " failed on rank " + std::to_string(rank_) +
                          ": " + e.what());
    } catch (const gloo::EnforceNotMet& e) {
      throw InternalError(std::string("Gloo ") + what + " failed on rank " + std::to_string(rank_) +
                          ": " + e.what());
    }
  }

  // Tags keep consecutive new-API operations' messages apart; all ranks advance them together.
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
