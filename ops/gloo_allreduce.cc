#include "ops/gloo_allreduce.h"

#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring_chunked.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cohort/errors.h"
#include "ops/reduce.h"

namespace cohort::ops {
namespace {

// Gloo's legacy templates reduce through a function pointer; this one forwards to our kernels with
// the element type fixed at compile time (16-bit floats travel as uint16_t, bool as uint8_t).
template <typename T, DataType D, ReduceOp Op>
void reduce_kernel(T* dst, const T* src, size_t n) {
  reduce_into(dst, src, n, D, Op);
}

template <typename T, DataType D, ReduceOp Op>
const gloo::ReductionFunction<T>* reduction() {
  static const gloo::ReductionFunction<T> fn(gloo::CUSTOM, &reduce_kernel<T, D, Op>);
  return &fn;
}

void check_op(ReduceOp op) {
  if (op == ReduceOp::kAverage) {
    throw InvalidArgument("the Gloo backend reduces with sum, min, max or product, not average");
  }
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
  check_op(op);
  return nullptr;
}

// Calls `f.template operator()<T, D>()` with T the storage type that Gloo's templates move.
template <typename F>
auto with_storage_type(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kUInt8:
      return f.template operator()<uint8_t, DataType::kUInt8>();
    case DataType::kInt8:
      return f.template operator()<int8_t, DataType::kInt8>();
    case DataType::kInt32:
      return f.template operator()<int32_t, DataType::kInt32>();
    case DataType::kInt64:
      return f.template operator()<int64_t, DataType::kInt64>();
    case DataType::kFloat16:
      return f.template operator()<uint16_t, DataType::kFloat16>();
    case DataType::kBFloat16:
      return f.template operator()<uint16_t, DataType::kBFloat16>();
    case DataType::kFloat32:
      return f.template operator()<float, DataType::kFloat32>();
    case DataType::kFloat64:
      return f.template operator()<double, DataType::kFloat64>();
    case DataType::kBool:
      return f.template operator()<uint8_t, DataType::kBool>();
  }
  throw InvalidArgument("unknown data type " + std::to_string(static_cast<int>(dtype)));
}

}  // namespace

// Halving-doubling below 8 MiB, the new-API ring from 8 MiB up. Measured with
// `build/bin/gloo_allreduce_bench <ranks>` (processes over loopback TCP, float32 sum,
// legacy objects reused; mean us per op / GB/s). The machine (2 vCPUs) was shared with other
// builds while measuring (load 3-4), so the absolute times are 3-4x the quiet-machine figures
// of shared/research/environment.md §3, whose ranking agrees (quiet, 2 ranks: HD 122 us at
// 4 KiB, 1.48 GB/s at 4 MiB vs ring 1.05; ring 1.51 GB/s at 64 MiB vs HD 1.31).
// 2 ranks, 3 runs (HD = halving-doubling, RC = ring-chunked, ring = new-API ring):
//     4 KiB  HD 610/618/528 us     RC 808/945/540 us     ring 3935/4014/643 us
//   256 KiB  HD 738/955/1218 us    RC 944/1135/1586 us   ring 3866/3932/631 us
//     1 MiB  HD 1262/1208/1390 us  RC 1383/1328/829 us   ring 4030/3944/2913 us
//     4 MiB  HD .70/.72/.69 GB/s   RC .56/1.05/.74 GB/s  ring .60/.91/.77 GB/s
//    16 MiB  HD .79/.70/.67 GB/s   RC .75/.86/.76 GB/s   ring .72/.75/.82 GB/s
//    64 MiB  HD .70/.64/.53 GB/s   RC .85/.67/.69 GB/s   ring .72/.78/.62 GB/s
//   256 MiB  HD 1.03/.72/.69 GB/s  RC .81/.72/.72 GB/s   ring .72/.88/.96 GB/s
// 3 ranks, 1 run:
//     4 KiB  HD 552 us   RC 2123 us   ring 1677 us
//     1 MiB  HD 1328 us  RC 2640 us   ring 2874 us
//     4 MiB  HD .51      RC .50       ring .53 GB/s
//    16 MiB  HD .37      RC .54       ring .67 GB/s
//    64 MiB  HD .36      RC .45       ring .69 GB/s
//   256 MiB  HD .38      RC .43       ring .65 GB/s
// Quiet machine, 2 ranks, 7 interleaved trials (allreduce_bench, docs/benchmarks.md), busbw GB/s:
//    16 MiB  HD 1.26  RC 1.10  ring 0.97      64 MiB  HD 1.24  RC 1.24  ring 1.04
//   128 MiB  HD 1.31  RC 1.18  ring 1.07     256 MiB  HD 1.30  RC 1.29  ring 1.00
// so on a power-of-two number of ranks halving-doubling stays best at every size.
// Halving-doubling is the only steady choice below 4 MiB (the new-API ring stalls on the 4 ms
// scheduler tick there, and ring-chunked falls behind at 3 ranks); from 16 MiB the ring is
// fastest or close at 2 ranks and clearly fastest at 3, and it keeps no cached object (the legacy
// ones hold scratch space as large as the buffer). Ring-chunked never won consistently.
GlooAllreduceAlgorithm choose_gloo_allreduce(size_t count, size_t bytes, int ranks) {
  constexpr size_t kRingFromBytes = size_t{8} << 20;
  // The legacy algorithms count elements in an int.
  bool int_count = count <= static_cast<size_t>(std::numeric_limits<int>::max());
  // Halving-doubling is exact recursive halving on a power of two; otherwise its extra block
  // steps make it slower than the ring for large messages (3 ranks above).
  bool power_of_two = (ranks & (ranks - 1)) == 0;
  bool halving_doubling = int_count && (power_of_two || bytes < kRingFromBytes);
  return halving_doubling ? GlooAllreduceAlgorithm::kHalvingDoubling
                          : GlooAllreduceAlgorithm::kRing;
}

std::unique_ptr<gloo::Algorithm> make_gloo_allreduce(GlooAllreduceAlgorithm algorithm,
                                                     const std::shared_ptr<gloo::Context>& context,
                                                     void* buffer, size_t count, DataType dtype,
                                                     ReduceOp op) {
  check_op(op);
  if (count > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw InvalidArgument("Gloo's legacy allreduce takes at most 2^31-1 elements");
  }
  return with_storage_type(dtype,
                           [&]<typename T, DataType D>() -> std::unique_ptr<gloo::Algorithm> {
                             std::vector<T*> ptrs{static_cast<T*>(buffer)};
                             auto n = static_cast<int>(count);
                             if (algorithm == GlooAllreduceAlgorithm::kRingChunked) {
                               return std::make_unique<gloo::AllreduceRingChunked<T>>(
                                   context, ptrs, n, reduction_for<T, D>(op));
                             }
                             return std::make_unique<gloo::AllreduceHalvingDoubling<T>>(
                                 context, ptrs, n, reduction_for<T, D>(op));
                           });
}

void run_gloo_ring_allreduce(const std::shared_ptr<gloo::Context>& context, void* buffer,
                             size_t count, DataType dtype, ReduceOp op, uint32_t tag,
                             GlooWaitBreaker::InFlight& in_flight) {
  check_op(op);
  size_t element = element_size(dtype);
  gloo::AllreduceOptions opts(context);
  auto data = context->createUnboundBuffer(buffer, count * element);
  GlooWaitBreaker::Watch watch(in_flight, {data.get()});
  with_storage_type(dtype, [&]<typename T, DataType>() { opts.setOutput<T>(std::move(data)); });
  // Gloo asks for c = a op b; every op here is commutative, so an aliased operand is reduced into.
  opts.setReduceFunction([dtype, op, element](void* c, const void* a, const void* b, size_t n) {
    if (c == b) std::swap(a, b);
    if (c != a) std::memcpy(c, a, n * element);
    reduce_into(c, b, n, dtype, op);
  });
  opts.setTag(tag);
  gloo::allreduce(opts);
}

}  // namespace cohort::ops
