#include "ops/mpi_backend.h"

#include <mpi.h>

#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "cohort/errors.h"
#include "ops/reduce.h"

namespace cohort::ops {
namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw InternalError(std::string("MPI ") + what + " failed: " + std::string(text, len));
}

// MPI_Finalize may run only once per process, so it runs at exit, never at cohort::shutdown().
void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void ensure_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  std::atexit(finalize_at_exit);
}

MPI_Datatype native_type(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8:
      return MPI_UINT8_T;
    case DataType::kInt8:
      return MPI_INT8_T;
    case DataType::kInt32:
      return MPI_INT32_T;
    case DataType::kInt64:
      return MPI_INT64_T;
    case DataType::kFloat32:
      return MPI_FLOAT;
    case DataType::kFloat64:
      return MPI_DOUBLE;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return MPI_UINT16_T;  // reduced by our own MPI_Op
    case DataType::kBool:
      return MPI_UINT8_T;  // reduced by our own MPI_Op
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op native_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kMin:
      return MPI_MIN;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kProduct:
      return MPI_PROD;
    case ReduceOp::kAverage:
      break;
  }
  throw InvalidArgument("the MPI backend reduces with sum, min, max or product");
}

// User-defined MPI ops for the types MPI cannot reduce natively, one per (type, op).
template <DataType D, ReduceOp Op>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(inout, in, static_cast<size_t>(*len), D, Op);
}

class MpiBackend final : public Backend {
 public:
  MpiBackend() {
    ensure_initialized();
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    create_user_ops();
  }

  ~MpiBackend() override {
    for (auto& op : user_ops_) MPI_Op_free(&op);
    MPI_Comm_free(&comm_);
  }

  std::string_view name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce(void* buffer, size_t count, DataType dtype, ReduceOp op,
                 const BufferBinding&) override {
    if (count == 0) return;
    check(MPI_Allreduce(MPI_IN_PLACE, buffer, int_count(count), native_type(dtype),
                        mpi_op(dtype, op), comm_),
          "MPI_Allreduce");
  }

  void broadcast(void* buffer, size_t bytes, int root) override {
    if (bytes == 0) return;
    check(MPI_Bcast(buffer, int_count(bytes), MPI_BYTE, root, comm_), "MPI_Bcast");
  }

  void allgatherv(const void* input, void* output, std::span<const size_t> counts) override {
    std::vector<int> sizes, offsets;
    int offset = 0;
    for (size_t c : counts) {
      sizes.push_back(int_count(c));
      offsets.push_back(offset);
      offset += sizes.back();
    }
    check(MPI_Allgatherv(input, sizes[rank_], MPI_BYTE, output, sizes.data(), offsets.data(),
                         MPI_BYTE, comm_),
          "MPI_Allgatherv");
  }

  void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }

 private:
  static int int_count(size_t n) {
    if (n > static_cast<size_t>(std::numeric_limits<int>::max())) {
      throw InvalidArgument("the MPI backend moves at most 2^31-1 elements per operation");
    }
    return static_cast<int>(n);
  }

  template <DataType D>
  void add_user_ops() {
    MPI_Op op;
    MPI_Op_create(&user_reduce<D, ReduceOp::kSum>, 1, &op);
    user_ops_.push_back(op);
    MPI_Op_create(&user_reduce<D, ReduceOp::kMin>, 1, &op);
    user_ops_.push_back(op);
    MPI_Op_create(&user_reduce<D, ReduceOp::kMax>, 1, &op);
    user_ops_.push_back(op);
    MPI_Op_create(&user_reduce<D, ReduceOp::kProduct>, 1, &op);
    user_ops_.push_back(op);
  }

  void create_user_ops() {
    add_user_ops<DataType::kFloat16>();
    add_user_ops<DataType::kBFloat16>();
    add_user_ops<DataType::kBool>();
  }

  MPI_Op mpi_op(DataType dtype, ReduceOp op) {
    int base;
    switch (dtype) {
      case DataType::kFloat16:
        base = 0;
        break;
      case DataType::kBFloat16:
        base = 4;
        break;
      case DataType::kBool:
        base = 8;
        break;
      default:
        return native_op(op);
    }
    native_op(op);  // rejects average
    int index = op == ReduceOp::kSum ? 0 : op == ReduceOp::kMin ? 1 : op == ReduceOp::kMax ? 2 : 3;
    return user_ops_[base + index];
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<MPI_Op> user_ops_;
};

}  // namespace

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

std::unique_ptr<Backend> make_mpi_backend() {
  return std::make_unique<MpiBackend>();
}

}  // namespace cohort::ops
