#include "ops/shm_backend.h"

#include <numeric>
#include <string>
#include <vector>

#include "cohort/errors.h"
#include "ops/backend_args.h"
#include "ops/shm_collectives.h"

namespace cohort::ops {
namespace {

class ShmBackend final : public Backend {
 public:
  ShmBackend(std::unique_ptr<Backend> world, std::unique_ptr<ShmGroup> group)
      : world_(std::move(world)), group_(std::move(group)) {}

  std::string_view name() const override { return "shm"; }
  int rank() const override { return group_->rank(); }
  int size() const override { return group_->size(); }

  void allreduce(void* buffer, size_t count, DataType dtype, ReduceOp op,
                 const BufferBinding&) override {
    check_reduce_op("shared-memory allreduce", op);
    shm::allreduce(*group_, buffer, count, dtype, op);
  }

  void broadcast(void* buffer, size_t bytes, int root) override {
    check_root("shared-memory broadcast", root, size());
    shm::broadcast(*group_, buffer, bytes, root);
  }

  void allgatherv(const void* input, void* output, std::span<const size_t> counts) override {
    check_rank_counts("shared-memory allgather", counts, size());
    shm::allgatherv(*group_, input, output, counts);
  }

  void barrier() override { group_->barrier("barrier"); }

  void alltoallv(const void* input, std::span<const size_t> send_counts, void* output,
                 std::span<const size_t> recv_counts) override {
    check_alltoallv("shared-memory alltoall", send_counts, recv_counts, rank(), size());
    check_disjoint("shared-memory alltoall", input,
                   std::accumulate(send_counts.begin(), send_counts.end(), size_t{0}), output,
                   std::accumulate(recv_counts.begin(), recv_counts.end(), size_t{0}));
    shm::alltoallv(*group_, input, send_counts, output, recv_counts);
  }

  void reduce_scatter(const void* input, void* output, std::span<const size_t> counts,
                      DataType dtype, ReduceOp op) override {
    size_t mine = check_reduce_scatter("shared-memory reduce_scatter", input, output, counts, dtype,
                                       op, rank(), size());
    size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    size_t end = mine + counts[rank()];
    size_t element = element_size(dtype);
    auto* out = static_cast<std::byte*>(output);
    shm::reduce(*group_, "reduce_scatter", input, total, dtype, op,
                [&](size_t first, size_t n, const std::byte* values) {
                  size_t lo = std::max(first, mine), hi = std::min(first + n, end);
                  if (lo < hi) {
                    shm::copy_bytes(out + (lo - mine) * element, values + (lo - first) * element,
                                    (hi - lo) * element);
                  }
                });
  }

  // Process sets keep to the world's transport.
  std::unique_ptr<Backend> split(std::span<const int> ranks, const std::string& key) override {
    return world_->split(ranks, key);
  }

  void abort(const std::string& reason) override {
    group_->abort(reason);
    world_->abort(reason);
  }

 private:
  std::unique_ptr<Backend> world_;
  std::unique_ptr<ShmGroup> group_;
};

}  // namespace

std::unique_ptr<ShmGroup> join_shm_group(const ShmRendezvous& meet, std::vector<int> members,
                                         int local, const ShmBackendOptions& options) {
  int size = static_cast<int>(members.size());
  auto deadline = SteadyClock::now() + options.timeout;
  size_t bytes = ShmGroup::segment_bytes(size, options.slot_bytes);
  ShmSegment segment = local == 0 ? ShmSegment::create(meet, size, bytes, deadline, options.cancel)
                                  : ShmSegment::open(meet, local, deadline, options.cancel);
  return std::make_unique<ShmGroup>(std::move(segment), local, std::move(members),
                                    options.slot_bytes, options.timeout);
}

std::unique_ptr<Backend> make_shm_backend(std::unique_ptr<Backend>& world,
                                          const ShmBackendOptions& options) {
  int rank = world->rank(), size = world->size();
  if (options.slot_bytes % 4096 != 0 || options.slot_bytes < 16 * size_t(size)) {
    throw InvalidArgument("shared memory: a slot of " + std::to_string(options.slot_bytes) +
                          " bytes is not a multiple of 4096 holding 16 bytes per rank");
  }
  ShmRendezvous meet;
  if (rank == 0) meet = ShmRendezvous::random();
  world->broadcast(&meet, sizeof(meet), 0);
  std::vector<int> names(size);
  std::iota(names.begin(), names.end(), 0);
  auto group = join_shm_group(meet, std::move(names), rank, options);
  return std::make_unique<ShmBackend>(std::move(world), std::move(group));
}

}  // namespace cohort::ops
