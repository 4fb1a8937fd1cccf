#include "ops/mpi_backend.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "cohort/errors.h"
#include "core/log.h"
#include "ops/reduce.h"

namespace cohort::ops {
namespace {

// MPI counts are ints: larger transfers are split into pieces of at most this many elements.
constexpr size_t kMaxCount = static_cast<size_t>(std::numeric_limits<int>::max());

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  throw InternalError(std::string("MPI ") + what + " failed (error " + std::to_string(rc) +
                      "): " + std::string(text, static_cast<size_t>(len)));
}

bool is_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

// MPI cannot be initialized again after MPI_Finalize, and the runtime may shut down and start
// again in one process, so MPI stays up until exit if we started it.
void finalize_at_exit() {
  if (!is_finalized()) MPI_Finalize();
}

void ensure_initialized() {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (is_finalized()) {
    throw InternalError("MPI backend: MPI was already finalized in this process");
  }
  if (!initialized) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    std::atexit(finalize_at_exit);
  }
  int level = 0;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_SERIALIZED) {
    // Someone else initialized MPI for the main thread only; our background thread calls it.
    log::warning("MPI was initialized with thread level ", level,
                 "; Cohort calls MPI from its own thread and needs MPI_THREAD_SERIALIZED or more");
  }
}

MPI_Datatype mpi_type(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8:
    case DataType::kBool:  // reduced by our logical kernels (user-defined ops)
      return MPI_UINT8_T;
    case DataType::kInt8:
      return MPI_INT8_T;
    case DataType::kInt32:
      return MPI_INT32_T;
    case DataType::kInt64:
      return MPI_INT64_T;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return MPI_UINT16_T;  // reduced in float by our kernels (user-defined ops)
    case DataType::kFloat32:
      return MPI_FLOAT;
    case DataType::kFloat64:
      return MPI_DOUBLE;
  }
  throw InvalidArgument("MPI backend: unknown data type");
}

// The element types MPI cannot reduce natively; each gets one user-defined op per ReduceOp.
constexpr std::array<DataType, 3> kUserTypes = {DataType::kFloat16, DataType::kBFloat16,
                                                DataType::kBool};
constexpr std::array<ReduceOp, 4> kOps = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax,
                                          ReduceOp::kProduct};

template <DataType D, ReduceOp Op>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(inout, in, static_cast<size_t>(*len), D, Op);
}

template <DataType D, ReduceOp Op>
MPI_Op create_op() {
  MPI_Op op;
  check(MPI_Op_create(&user_reduce<D, Op>, /*commute=*/1, &op), "MPI_Op_create");
  return op;
}

template <DataType D>
std::array<MPI_Op, 4> create_ops() {
  return {create_op<D, kOps[0]>(), create_op<D, kOps[1]>(), create_op<D, kOps[2]>(),
          create_op<D, kOps[3]>()};
}

size_t op_index(ReduceOp op) {
  auto it = std::find(kOps.begin(), kOps.end(), op);
  if (it == kOps.end()) {
    throw InvalidArgument("MPI allreduce: average is a sum followed by a scale");
  }
  return static_cast<size_t>(it - kOps.begin());
}

class MpiBackend final : public Backend {
 public:
  MpiBackend() {
    for (auto& ops : user_ops_) ops.fill(MPI_OP_NULL);
    ensure_initialized();
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    try {
      check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
      check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
      check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
      user_ops_[0] = create_ops<kUserTypes[0]>();
      user_ops_[1] = create_ops<kUserTypes[1]>();
      user_ops_[2] = create_ops<kUserTypes[2]>();
    } catch (...) {
      release();
      throw;
    }
  }

  ~MpiBackend() override { release(); }

  std::string_view name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce(void* buffer, size_t count, DataType dtype, ReduceOp op,
                 const BufferBinding&) override {
    MPI_Op mop = mpi_op(dtype, op);
    MPI_Datatype type = mpi_type(dtype);
    auto* bytes = static_cast<char*>(buffer);
    size_t element = element_size(dtype);
    for (size_t done = 0; done < count; done += kMaxCount) {
      int n = static_cast<int>(std::min(kMaxCount, count - done));
      check(MPI_Allreduce(MPI_IN_PLACE, bytes + done * element, n, type, mop, comm_),
            "MPI_Allreduce");
    }
  }

  void broadcast(void* buffer, size_t bytes, int root) override {
    if (root < 0 || root >= size_) {
      throw InvalidArgument("MPI broadcast: root " + std::to_string(root) + " is not a rank");
    }
    auto* data = static_cast<char*>(buffer);
    for (size_t done = 0; done < bytes; done += kMaxCount) {
      int n = static_cast<int>(std::min(kMaxCount, bytes - done));
      check(MPI_Bcast(data + done, n, MPI_BYTE, root, comm_), "MPI_Bcast");
    }
  }

  void allgatherv(const void* input, void* output, std::span<const size_t> counts) override {
    if (counts.size() != static_cast<size_t>(size_)) {
      throw InvalidArgument("MPI allgatherv: " + std::to_string(counts.size()) + " counts for " +
                            std::to_string(size_) + " ranks");
    }
    std::vector<int> sizes, offsets;
    size_t offset = 0;
    for (size_t c : counts) {
      if (offset + c > kMaxCount) {
        throw InvalidArgument("MPI allgatherv moves at most 2^31-1 bytes in all");
      }
      sizes.push_back(static_cast<int>(c));
      offsets.push_back(static_cast<int>(offset));
      offset += c;
    }
    check(MPI_Allgatherv(input, sizes[rank_], MPI_BYTE, output, sizes.data(), offsets.data(),
                         MPI_BYTE, comm_),
          "MPI_Allgatherv");
  }

  void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }

 private:
  MPI_Op mpi_op(DataType dtype, ReduceOp op) const {
    size_t index = op_index(op);
    auto user = std::find(kUserTypes.begin(), kUserTypes.end(), dtype);
    if (user != kUserTypes.end()) return user_ops_[user - kUserTypes.begin()][index];
    // Open MPI's native integer sum and product wrap around on overflow, like our kernels.
    constexpr std::array<MPI_Op, 4> native = {MPI_SUM, MPI_MIN, MPI_MAX, MPI_PROD};
    return native[index];
  }

  // Frees what MPI still holds; after MPI_Finalize (at exit) nothing may be called.
  void release() {
    if (is_finalized()) return;
    for (auto& ops : user_ops_) {
      for (auto& op : ops) {
        if (op != MPI_OP_NULL) MPI_Op_free(&op);
      }
    }
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::array<std::array<MPI_Op, 4>, kUserTypes.size()> user_ops_{};
};

}  // namespace

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

std::unique_ptr<Backend> make_mpi_backend() {
  return std::make_unique<MpiBackend>();
}

}  // namespace cohort::ops
