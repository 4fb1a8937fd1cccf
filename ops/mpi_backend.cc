#include "ops/mpi_backend.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "base/launch_env.h"
#include "base/log.h"
#include "base/mutex.h"
#include "cohort/errors.h"
#include "ops/backend_args.h"
#include "ops/mpi_library.h"
#include "ops/reduce.h"

namespace cohort::ops {
namespace {

// MPI counts are ints: larger transfers are split into pieces of at most this many elements.
constexpr size_t kMaxCount = static_cast<size_t>(std::numeric_limits<int>::max());

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (mpi().error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  throw InternalError(std::string("MPI ") + what + " failed (error " + std::to_string(rc) +
                      "): " + std::string(text, static_cast<size_t>(len)));
}

bool is_finalized() {
  int finalized = 0;
  mpi().finalized(&finalized);
  return finalized != 0;
}

// MPI cannot be initialized again after MPI_Finalize, and the runtime may shut down and start
// again in one process, so MPI stays up until exit if we started it.
void finalize_at_exit() {
  if (!is_finalized()) mpi().finalize();
}

void ensure_initialized() {
  static Mutex mutex;
  MutexLock lock(mutex);
  int initialized = 0;
  mpi().initialized(&initialized);
  if (is_finalized()) {
    throw InternalError("MPI backend: MPI was already finalized in this process");
  }
  if (!initialized) {
    int provided = 0;
    check(mpi().init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    std::atexit(finalize_at_exit);
  }
  int level = 0;
  mpi().query_thread(&level);
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
      return mpi().uint8;
    case DataType::kInt8:
      return mpi().int8;
    case DataType::kInt32:
      return mpi().int32;
    case DataType::kInt64:
      return mpi().int64;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return mpi().uint16;  // reduced in float by our kernels (user-defined ops)
    case DataType::kFloat32:
      return mpi().float32;
    case DataType::kFloat64:
      return mpi().float64;
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
  check(mpi().op_create(&user_reduce<D, Op>, /*commute=*/1, &op), "MPI_Op_create");
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

// MPI_Comm_create_group's tag only has to be the same on every member; MPI guarantees tags up to
// 32767.
int split_tag(const std::string& key) {
  return static_cast<int>(stable_hash(key) % 32768);
}

class MpiBackend final : public Backend {
 public:
  // Takes ownership of `comm` (freed on destruction, or here if construction fails).
  explicit MpiBackend(MPI_Comm comm) : comm_(comm) {
    for (auto& ops : user_ops_) ops.fill(mpi().op_null);
    try {
      check(mpi().comm_set_errhandler(comm_, mpi().errors_return), "MPI_Comm_set_errhandler");
      check(mpi().comm_rank(comm_, &rank_), "MPI_Comm_rank");
      check(mpi().comm_size(comm_, &size_), "MPI_Comm_size");
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
      check(mpi().allreduce(MPI_IN_PLACE, bytes + done * element, n, type, mop, comm_),
            "MPI_Allreduce");
    }
  }

  void broadcast(void* buffer, size_t bytes, int root) override {
    check_root("MPI broadcast", root, size_);
    auto* data = static_cast<char*>(buffer);
    for (size_t done = 0; done < bytes; done += kMaxCount) {
      int n = static_cast<int>(std::min(kMaxCount, bytes - done));
      check(mpi().bcast(data + done, n, mpi().byte, root, comm_), "MPI_Bcast");
    }
  }

  void allgatherv(const void* input, void* output, std::span<const size_t> counts) override {
    check_rank_counts("MPI allgatherv", counts, size_);
    IntLayout layout("MPI allgatherv", counts, "bytes");
    check(mpi().allgatherv(input, layout.counts[rank_], mpi().byte, output, layout.counts.data(),
                           layout.offsets.data(), mpi().byte, comm_),
          "MPI_Allgatherv");
  }

  void barrier() override { check(mpi().barrier(comm_), "MPI_Barrier"); }

  void alltoallv(const void* input, std::span<const size_t> send_counts, void* output,
                 std::span<const size_t> recv_counts) override {
    check_alltoallv("MPI alltoallv", send_counts, recv_counts, rank_, size_);
    IntLayout sends("MPI alltoallv", send_counts, "bytes");
    IntLayout receives("MPI alltoallv", recv_counts, "bytes");
    check_disjoint("MPI alltoallv", input, sends.total, output, receives.total);
    check(mpi().alltoallv(input, sends.counts.data(), sends.offsets.data(), mpi().byte, output,
                          receives.counts.data(), receives.offsets.data(), mpi().byte, comm_),
          "MPI_Alltoallv");
  }

  void reduce_scatter(const void* input, void* output, std::span<const size_t> counts,
                      DataType dtype, ReduceOp op) override {
    check_reduce_scatter("MPI reduce_scatter", input, output, counts, dtype, op, rank_, size_);
    IntLayout layout("MPI reduce_scatter", counts, "elements");
    if (layout.total == 0) return;  // every rank passes the same counts
    MPI_Op mop = mpi_op(dtype, op);
    MPI_Datatype type = mpi_type(dtype);
    bool even = std::all_of(counts.begin(), counts.end(), [&](size_t c) { return c == counts[0]; });
    if (even) {
      check(mpi().reduce_scatter_block(input, output, layout.counts[0], type, mop, comm_),
            "MPI_Reduce_scatter_block");
      return;
    }
    check(mpi().reduce_scatter(input, output, layout.counts.data(), type, mop, comm_),
          "MPI_Reduce_scatter");
  }

  // MPI_Comm_create_group is collective over the new group only, which matches a split that
  // only its members call.
  std::unique_ptr<Backend> split(std::span<const int> ranks, const std::string& key) override {
    check_split("MPI split", ranks, rank_, size_);
    MPI_Group all = mpi().group_null, members = mpi().group_null;
    MPI_Comm comm = mpi().comm_null;
    check(mpi().comm_group(comm_, &all), "MPI_Comm_group");
    int rc = mpi().group_incl(all, static_cast<int>(ranks.size()), ranks.data(), &members);
    mpi().group_free(&all);
    check(rc, "MPI_Group_incl");
    rc = mpi().comm_create_group(comm_, members, split_tag(key), &comm);
    mpi().group_free(&members);
    check(rc, "MPI_Comm_create_group");
    return std::make_unique<MpiBackend>(comm);
  }

 private:
  MPI_Op mpi_op(DataType dtype, ReduceOp op) const {
    size_t index = op_index(op);
    auto user = std::find(kUserTypes.begin(), kUserTypes.end(), dtype);
    if (user != kUserTypes.end()) return user_ops_[user - kUserTypes.begin()][index];
    // Open MPI's native integer sum and product wrap around on overflow, like our kernels.
    // Not constexpr: Open MPI's handles are addresses, which clang refuses in a constant.
    const std::array<MPI_Op, 4> native = {mpi().sum, mpi().min, mpi().max, mpi().prod};
    return native[index];
  }

  // Byte or element counts as MPI's int counts and displacements; throws InvalidArgument when
  // the whole does not fit an int.
  struct IntLayout {
    IntLayout(std::string_view what, std::span<const size_t> sizes, std::string_view unit) {
      counts.reserve(sizes.size());
      offsets.reserve(sizes.size());
      for (size_t c : sizes) {
        if (c > kMaxCount - total) {
          throw InvalidArgument(std::string(what) + " takes at most 2^31-1 " + std::string(unit) +
                                " in all");
        }
        counts.push_back(static_cast<int>(c));
        offsets.push_back(static_cast<int>(total));
        total += c;
      }
    }
    std::vector<int> counts;
    std::vector<int> offsets;
    size_t total = 0;
  };

  // Frees what MPI still holds; after MPI_Finalize (at exit) nothing may be called.
  void release() {
    if (is_finalized()) return;
    for (auto& ops : user_ops_) {
      for (auto& op : ops) {
        if (op != mpi().op_null) mpi().op_free(&op);
      }
    }
    if (comm_ != mpi().comm_null) mpi().comm_free(&comm_);
  }

  MPI_Comm comm_ = mpi().comm_null;
  int rank_ = 0;
  int size_ = 1;
  std::array<std::array<MPI_Op, 4>, kUserTypes.size()> user_ops_{};
};

}  // namespace

bool launched_by_mpirun() {
  return env::launched_by_mpirun(env::process_getenv);
}

std::unique_ptr<Backend> make_mpi_backend() {
  ensure_initialized();
  MPI_Comm comm = mpi().comm_null;
  check(mpi().comm_dup(mpi().comm_world, &comm), "MPI_Comm_dup");
  return std::make_unique<MpiBackend>(comm);
}

}  // namespace cohort::ops
