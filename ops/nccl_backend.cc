#include "ops/nccl_backend.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "cohort/errors.h"
#include "ops/backend_args.h"
#include "ops/half.h"
#include "ops/nccl_call.h"

namespace cohort::ops {
namespace {

ncclDataType_t nccl_type(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8:
    case DataType::kBool:  // 0 or 1, reduced with max and min (see nccl_op)
      return ncclUint8;
    case DataType::kInt8:
      return ncclInt8;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kBFloat16:
      return ncclBfloat16;
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
  }
  throw InvalidArgument("NCCL backend: unknown data type " +
                        std::to_string(static_cast<int>(dtype)));
}

// Bool is logical everywhere in Cohort: sum and max are OR, product and min are AND, which on
// 0/1 values are max and min.
ncclRedOp_t nccl_op(const char* what, DataType dtype, ReduceOp op) {
  check_reduce_op(what, op);
  bool logical = dtype == DataType::kBool;
  switch (op) {
    case ReduceOp::kSum:
      return logical ? ncclMax : ncclSum;
    case ReduceOp::kProduct:
      return logical ? ncclMin : ncclProd;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
    case ReduceOp::kAverage:  // rejected by check_reduce_op above
      break;
  }
  return ncclMax;
}

// A reduction as NCCL takes it: a built-in operator, or a sum that first multiplies each rank's
// elements by a factor (PreMulSum), whose operator is made on the communicator for each operation.
struct Reduction {
  ncclRedOp_t builtin = ncclSum;
  bool scaled = false;
  std::byte factor[8] = {};  // the factor as a value of the reduced type, as PreMulSum wants it
};

Reduction builtin(const char* what, DataType dtype, ReduceOp op) {
  return {.builtin = nccl_op(what, dtype, op)};
}

Reduction scaled(const char* what, DataType dtype, double factor) {
  Reduction r{.scaled = true};
  auto store = [&r](auto value) { std::memcpy(r.factor, &value, sizeof value); };
  switch (dtype) {
    case DataType::kFloat16:
      store(float_to_float16(static_cast<float>(factor)));
      break;
    case DataType::kBFloat16:
      store(float_to_bfloat16(static_cast<float>(factor)));
      break;
    case DataType::kFloat32:
      store(static_cast<float>(factor));
      break;
    case DataType::kFloat64:
      store(factor);
      break;
    default:
      throw InvalidArgument(std::string(what) + ": a scaled sum needs a floating-point type, not " +
                            std::string(to_string(dtype)));
  }
  return r;
}

// The operator of one operation: the built-in one, or a PreMulSum made now and destroyed when
// the NCCL call that uses it has returned (NCCL reads it when the call is enqueued).
class OperatorScope {
 public:
  OperatorScope(const Reduction& reduction, DataType dtype, ncclComm_t comm)
      : op_(reduction.builtin), comm_(reduction.scaled ? comm : nullptr) {
    if (!comm_) return;
    auto* factor = const_cast<std::byte*>(reduction.factor);  // NCCL's API is not const-correct
    check_nccl(
        ncclRedOpCreatePreMulSum(&op_, factor, nccl_type(dtype), ncclScalarHostImmediate, comm),
        "ncclRedOpCreatePreMulSum", comm);
  }
  ~OperatorScope() {
    if (comm_) ncclRedOpDestroy(op_, comm_);
  }
  OperatorScope(const OperatorScope&) = delete;
  OperatorScope& operator=(const OperatorScope&) = delete;

  ncclRedOp_t op() const { return op_; }

 private:
  ncclRedOp_t op_;
  ncclComm_t comm_;
};

bool all_equal(std::span<const size_t> counts) {
  return std::all_of(counts.begin(), counts.end(), [&](size_t c) { return c == counts[0]; });
}

struct StreamDestroyer {
  void operator()(CUstream_st* stream) const { cudaStreamDestroy(stream); }
};
struct DeviceFree {
  void operator()(void* memory) const { cudaFree(memory); }
};

// Finalizes (bounded) and destroys a communicator; aborts it if finalizing fails or hangs.
struct CommCloser {
  std::chrono::milliseconds timeout;
  void operator()(ncclComm* comm) const {
    try {
      check_nccl(ncclCommFinalize(comm), "ncclCommFinalize", comm);
      wait_comm_ready(comm, timeout, "ncclCommFinalize");
      check_nccl(ncclCommDestroy(comm), "ncclCommDestroy", comm);
    } catch (const InternalError&) {
      ncclCommAbort(comm);
    }
  }
};

class NcclBackend final : public DeviceBackend {
 public:
  // `owned` is null or the object `bootstrap` refers to (a split's CPU backend).
  NcclBackend(Backend& bootstrap, std::unique_ptr<Backend> owned, int device,
              std::chrono::milliseconds timeout)
      : owned_bootstrap_(std::move(owned)),
        bootstrap_(bootstrap),
        rank_(bootstrap.rank()),
        size_(bootstrap.size()),
        device_(device),
        timeout_(timeout),
        comm_(nullptr, CommCloser{timeout}) {
    ncclUniqueId id{};
    agree_on_readiness(prepare(id));
    bootstrap_.broadcast(&id, sizeof id, 0);
    join(id);
  }

  ~NcclBackend() override { cudaSetDevice(device_); }

  std::string_view name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce(void* buffer, size_t count, DataType dtype, ReduceOp op,
                 const BufferBinding&) override {
    allreduce_with(buffer, count, dtype, builtin("NCCL allreduce", dtype, op));
  }

  void allreduce_scaled(void* buffer, size_t count, DataType dtype, double factor) override {
    allreduce_with(buffer, count, dtype, scaled("NCCL allreduce", dtype, factor));
  }

  void broadcast(void* buffer, size_t bytes, int root) override {
    check_root("NCCL broadcast", root, size_);
    if (bytes == 0) return;
    run("broadcast", [&](ncclComm_t comm, cudaStream_t stream) {
      check_nccl(ncclBroadcast(buffer, buffer, bytes, ncclUint8, root, comm, stream),
                 "ncclBroadcast", comm);
    });
  }

  void allgatherv(const void* input, void* output, std::span<const size_t> counts) override {
    check_rank_counts("NCCL allgatherv", counts, size_);
    if (std::accumulate(counts.begin(), counts.end(), size_t{0}) == 0) return;
    run("allgatherv", [&](ncclComm_t comm, cudaStream_t stream) {
      if (all_equal(counts)) {
        check_nccl(ncclAllGather(input, output, counts[0], ncclUint8, comm, stream),
                   "ncclAllGather", comm);
        return;
      }
      // NCCL has no allgatherv: one broadcast per contributing rank, fused by the group so
      // that they progress together.
      auto* out = static_cast<std::byte*>(output);
      for (int r = 0; r < size_; out += counts[r], ++r) {
        if (counts[r] == 0) continue;
        check_nccl(ncclBroadcast(input, out, counts[r], ncclUint8, r, comm, stream),
                   "ncclBroadcast", comm);
      }
    });
  }

  void barrier() override {
    run("barrier", [&](ncclComm_t comm, cudaStream_t stream) {
      check_nccl(ncclAllReduce(scratch_.get(), scratch_.get(), 1, ncclInt32, ncclSum, comm, stream),
                 "ncclAllReduce", comm);
    });
  }

  void alltoallv(const void* input, std::span<const size_t> send_counts, void* output,
                 std::span<const size_t> recv_counts) override {
    check_alltoallv("NCCL alltoallv", send_counts, recv_counts, rank_, size_);
    size_t sent = std::accumulate(send_counts.begin(), send_counts.end(), size_t{0});
    size_t received = std::accumulate(recv_counts.begin(), recv_counts.end(), size_t{0});
    check_disjoint("NCCL alltoallv", input, sent, output, received);
    // Transfers are pairwise, so a rank that moves nothing has no peer waiting for it.
    if (sent == 0 && received == 0) return;
    run("alltoallv", [&](ncclComm_t comm, cudaStream_t stream) {
      const auto* in = static_cast<const std::byte*>(input);
      auto* out = static_cast<std::byte*>(output);
      for (int p = 0; p < size_; in += send_counts[p], out += recv_counts[p], ++p) {
        if (p == rank_) {
          if (send_counts[p] == 0) continue;
          check_cuda(cudaMemcpyAsync(out, in, send_counts[p], cudaMemcpyDefault, stream),
                     "cudaMemcpyAsync");
          continue;
        }
        // Both ends of an empty transfer skip it: send_counts[p] here is recv_counts[r] there.
        if (send_counts[p] > 0) {
          check_nccl(ncclSend(in, send_counts[p], ncclUint8, p, comm, stream), "ncclSend", comm);
        }
        if (recv_counts[p] > 0) {
          check_nccl(ncclRecv(out, recv_counts[p], ncclUint8, p, comm, stream), "ncclRecv", comm);
        }
      }
    });
  }

  void reduce_scatter(const void* input, void* output, std::span<const size_t> counts,
                      DataType dtype, ReduceOp op) override {
    check_reduce_scatter("NCCL reduce_scatter", input, output, counts, dtype, op, rank_, size_);
    reduce_scatter_with(input, output, counts, dtype, builtin("NCCL reduce_scatter", dtype, op));
  }

  void reduce_scatter_scaled(const void* input, void* output, std::span<const size_t> counts,
                             DataType dtype, double factor) override {
    check_reduce_scatter("NCCL reduce_scatter", input, output, counts, dtype, ReduceOp::kSum, rank_,
                         size_);
    reduce_scatter_with(input, output, counts, dtype, scaled("NCCL reduce_scatter", dtype, factor));
  }

  std::shared_ptr<void> allocate(size_t bytes) override {
    if (bytes == 0) return nullptr;
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    void* memory = nullptr;
    check_cuda(cudaMalloc(&memory, bytes), "cudaMalloc");
    return std::shared_ptr<void>(memory, DeviceFree{});
  }

  int device() const override { return device_; }

  // The operation in flight (if any) stops at its next poll, and this one and every later one
  // abort the communicator and throw, naming `reason`. The communicator is aborted by the thread
  // that uses it (ncclCommAbort is not safe beside a running NCCL call on the same communicator).
  void abort(const std::string& reason) override {
    {
      MutexLock lock(abort_mutex_);
      if (abort_reason_.empty()) abort_reason_ = reason;
    }
    aborted_.store(true);
  }

  std::unique_ptr<Backend> split(std::span<const int> ranks, const std::string& key) override {
    check_split("NCCL split", ranks, rank_, size_);
    // The members alone need a channel to share the new id: a split of the CPU bootstrap, keyed
    // apart from any split the caller makes of that backend itself.
    auto members = bootstrap_.split(ranks, "nccl." + key);
    Backend& channel = *members;
    return std::make_unique<NcclBackend>(channel, std::move(members), device_, timeout_);
  }

 private:
  void allreduce_with(void* buffer, size_t count, DataType dtype, const Reduction& reduction) {
    if (count == 0) return;
    run("allreduce", [&](ncclComm_t comm, cudaStream_t stream) {
      OperatorScope op(reduction, dtype, comm);
      check_nccl(ncclAllReduce(buffer, buffer, count, nccl_type(dtype), op.op(), comm, stream),
                 "ncclAllReduce", comm);
    });
  }

  void reduce_scatter_with(const void* input, void* output, std::span<const size_t> counts,
                           DataType dtype, const Reduction& reduction) {
    ncclDataType_t type = nccl_type(dtype);
    if (std::accumulate(counts.begin(), counts.end(), size_t{0}) == 0) return;
    run("reduce_scatter", [&](ncclComm_t comm, cudaStream_t stream) {
      OperatorScope op(reduction, dtype, comm);
      if (all_equal(counts)) {
        check_nccl(ncclReduceScatter(input, output, counts[0], type, op.op(), comm, stream),
                   "ncclReduceScatter", comm);
        return;
      }
      // ncclReduceScatter takes equal blocks: uneven ones are reduced one per owner, fused by
      // the group. The traffic is the same; NCCL only schedules P operations instead of one.
      const auto* in = static_cast<const std::byte*>(input);
      for (int r = 0; r < size_; in += counts[r] * element_size(dtype), ++r) {
        if (counts[r] == 0) continue;
        void* mine = r == rank_ ? output : nullptr;  // NCCL writes only on the root
        check_nccl(ncclReduce(in, mine, counts[r], type, op.op(), r, comm, stream), "ncclReduce",
                   comm);
      }
    });
  }

  // Readies this rank's device (and, on rank 0, the communicator's id); returns "" or the reason
  // it failed.
  std::string prepare(ncclUniqueId& id) {
    try {
      check_cuda(cudaSetDevice(device_), "cudaSetDevice");
      cudaStream_t stream = nullptr;
      check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
      stream_.reset(stream);
      void* scratch = nullptr;
      check_cuda(cudaMalloc(&scratch, sizeof(int32_t)), "cudaMalloc");
      scratch_.reset(scratch);
      if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      return "";
    } catch (const InternalError& e) {
      return e.what();
    }
  }

  // Every rank learns whether every rank is ready before any waits in ncclCommInitRank for a
  // rank that will never come; all throw together, naming the ranks that failed.
  void agree_on_readiness(const std::string& local_failure) {
    std::vector<char> ready(size_);
    char mine = local_failure.empty() ? 1 : 0;
    std::vector<size_t> ones(size_, 1);
    bootstrap_.allgatherv(&mine, ready.data(), ones);
    std::string failed;
    for (int r = 0; r < size_; ++r) {
      if (!ready[r]) failed += (failed.empty() ? "" : ", ") + std::to_string(r);
    }
    if (failed.empty()) return;
    std::string message = "NCCL backend: rank(s) " + failed + " of " + std::to_string(size_) +
                          " could not prepare their CUDA device; no communicator was created";
    if (!local_failure.empty()) {
      message += ". Rank " + std::to_string(rank_) + ", device " + std::to_string(device_) + ": " +
                 local_failure;
    }
    throw InternalError(message);
  }

  // Joins the communicator without blocking inside NCCL, so that a rank that never arrives
  // costs `timeout_` and an abort rather than a hang.
  void join(const ncclUniqueId& id) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t comm = nullptr;
    try {
      check_nccl(ncclCommInitRankConfig(&comm, size_, id, rank_, &config),
                 "ncclCommInitRankConfig");
      wait_comm_ready(comm, timeout_, "ncclCommInitRankConfig");
    } catch (const InternalError& e) {
      if (comm != nullptr) ncclCommAbort(comm);
      throw InternalError("NCCL backend on rank " + std::to_string(rank_) + " of " +
                          std::to_string(size_) + ": " + e.what());
    }
    comm_.reset(comm);
  }

  // Enqueues one operation as a group, waits until it has run, and turns any failure into an
  // aborted communicator and an InternalError naming the operation and rank.
  template <typename Enqueue>
  void run(const char* what, Enqueue&& enqueue) {
    if (aborted_.load() && comm_) ncclCommAbort(comm_.release());
    if (!comm_) {
      throw InternalError("NCCL " + std::string(what) + " on rank " + std::to_string(rank_) +
                          ": the communicator was aborted " + aborted_because());
    }
    ncclComm_t comm = comm_.get();
    try {
      check_cuda(cudaSetDevice(device_), "cudaSetDevice");
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      try {
        enqueue(comm, stream_.get());
      } catch (...) {
        ncclGroupEnd();  // NCCL keeps the group open per thread otherwise
        throw;
      }
      check_nccl(ncclGroupEnd(), "ncclGroupEnd", comm);
      wait_comm_ready(comm, timeout_, what, &aborted_);
      wait_stream(comm, stream_.get(), timeout_, what, &aborted_);
    } catch (const InternalError& e) {
      ncclCommAbort(comm_.release());
      std::string why = aborted_.load() ? " (" + aborted_because() + ")" : "";
      throw InternalError("NCCL " + std::string(what) + " failed on rank " + std::to_string(rank_) +
                          " of " + std::to_string(size_) + ": " + e.what() + why);
    }
  }

  std::string aborted_because() {
    MutexLock lock(abort_mutex_);
    return abort_reason_.empty() ? "after an earlier failure" : "by abort(): " + abort_reason_;
  }

  std::unique_ptr<Backend> owned_bootstrap_;
  Backend& bootstrap_;
  int rank_;
  int size_;
  int device_;
  std::chrono::milliseconds timeout_;
  // Destroyed in reverse order: the communicator before the memory and stream it uses.
  std::unique_ptr<CUstream_st, StreamDestroyer> stream_;
  std::unique_ptr<void, DeviceFree> scratch_;  // one int32 for barrier()
  std::unique_ptr<ncclComm, CommCloser> comm_;
  std::atomic<bool> aborted_{false};  // set by abort(), from any thread
  Mutex abort_mutex_;
  std::string abort_reason_ GUARDED_BY(abort_mutex_);
};

}  // namespace

int nccl_version() {
  int version = 0;
  check_nccl(ncclGetVersion(&version), "ncclGetVersion");
  return version;
}

std::unique_ptr<DeviceBackend> make_nccl_backend(Backend& bootstrap, int cuda_device,
                                                 std::chrono::milliseconds timeout) {
  // A bad device number is not rejected here but by cudaSetDevice, so that every rank learns of
  // it through agree_on_readiness instead of waiting for this one.
  return std::make_unique<NcclBackend>(bootstrap, nullptr, cuda_device, timeout);
}

}  // namespace cohort::ops
