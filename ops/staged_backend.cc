#include "ops/staged_backend.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <numeric>
#include <optional>
#include <string>

#include "base/mutex.h"
#include "cohort/errors.h"
#include "ops/backend_args.h"
#include "ops/reduce.h"

namespace cohort::ops {
namespace {

size_t total(std::span<const size_t> counts) {
  return std::accumulate(counts.begin(), counts.end(), size_t{0});
}

void check_scalable(const char* what, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64:
      return;
    default:
      throw InvalidArgument(std::string(what) + ": a scaled sum needs a floating-point type, not " +
                            std::string(to_string(dtype)));
  }
}

// Slots hold whole elements of every type: a multiple of 8 bytes, at least 8.
size_t slot_size(size_t chunk_bytes) {
  return (std::max(chunk_bytes, size_t{8}) + 7) / 8 * 8;
}

// What the host does with one chunk in a slot: (host bytes, length in bytes, slot index).
using Step = std::function<void(std::byte*, size_t, int)>;

class StagedBackend final : public DeviceBackend {
 public:
  // `owned` is null or the object `host` refers to (a split's host backend).
  StagedBackend(Backend& host, std::unique_ptr<Backend> owned, std::unique_ptr<DeviceCopier> copier,
                size_t chunk_bytes)
      : owned_host_(std::move(owned)),
        host_(host),
        rank_(host.rank()),
        size_(host.size()),
        slot_bytes_(slot_size(chunk_bytes)),
        copier_(std::move(copier)) {}

  ~StagedBackend() override { drain(); }

  std::string_view name() const override { return "staged"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int device() const override { return copier_->device(); }

  void allreduce(void* buffer, size_t count, DataType dtype, ReduceOp op,
                 const BufferBinding& binding) override {
    check_reduce_op("staged allreduce", op);
    reduce_chunks(buffer, count, dtype, [&](std::byte* chunk, size_t bytes, int slot) {
      host_.allreduce(chunk, bytes / element_size(dtype), dtype, op, slot_binding(binding, slot));
    });
  }

  void allreduce_scaled(void* buffer, size_t count, DataType dtype, double factor) override {
    check_scalable("staged allreduce", dtype);
    reduce_chunks(buffer, count, dtype, [&](std::byte* chunk, size_t bytes, int slot) {
      size_t n = bytes / element_size(dtype);
      host_.allreduce(chunk, n, dtype, ReduceOp::kSum,
                      slot_binding({"cohort.staged.scaled", false}, slot));
      scale(chunk, n, dtype, factor);
    });
  }

  void broadcast(void* buffer, size_t bytes, int root) override {
    check_root("staged broadcast", root, size_);
    if (bytes == 0) return;
    bool mine = rank_ == root;  // the root's device already holds the result
    pipeline("broadcast", buffer, bytes, slot_bytes_, mine, !mine,
             [&](std::byte* chunk, size_t n, int) { host_.broadcast(chunk, n, root); });
  }

  void allgatherv(const void* input, void* output, std::span<const size_t> counts) override {
    check_rank_counts("staged allgatherv", counts, size_);
    size_t all = total(counts), mine = counts[rank_];
    if (all == 0) return;
    guarded("allgatherv", [&] {
      std::byte* in = whole(mine + all);
      copy_in(in, input, mine);
      host_.allgatherv(in, in + mine, counts);
      copy_out(output, in + mine, all);
    });
  }

  void barrier() override {
    guarded("barrier", [&] { host_.barrier(); });
  }

  void alltoallv(const void* input, std::span<const size_t> send_counts, void* output,
                 std::span<const size_t> recv_counts) override {
    check_alltoallv("staged alltoallv", send_counts, recv_counts, rank_, size_);
    size_t sent = total(send_counts), received = total(recv_counts);
    check_disjoint("staged alltoallv", input, sent, output, received);
    guarded("alltoallv", [&] {
      std::byte* in = whole(sent + received);
      copy_in(in, input, sent);
      host_.alltoallv(in, send_counts, in + sent, recv_counts);
      copy_out(output, in + sent, received);
    });
  }

  void reduce_scatter(const void* input, void* output, std::span<const size_t> counts,
                      DataType dtype, ReduceOp op) override {
    check_reduce_scatter("staged reduce_scatter", input, output, counts, dtype, op, rank_, size_);
    scatter(input, output, counts, dtype, op, std::nullopt);
  }

  void reduce_scatter_scaled(const void* input, void* output, std::span<const size_t> counts,
                             DataType dtype, double factor) override {
    check_reduce_scatter("staged reduce_scatter", input, output, counts, dtype, ReduceOp::kSum,
                         rank_, size_);
    check_scalable("staged reduce_scatter", dtype);
    scatter(input, output, counts, dtype, ReduceOp::kSum, factor);
  }

  std::shared_ptr<void> allocate(size_t bytes) override {
    if (bytes == 0) return nullptr;
    return copier_->allocate_device(bytes);
  }

  std::unique_ptr<Backend> split(std::span<const int> ranks, const std::string& key) override {
    check_split("staged split", ranks, rank_, size_);
    check_open("split");
    // Keyed apart from any split the caller makes of the host backend itself.
    auto members = host_.split(ranks, "staged." + key);
    Backend& channel = *members;
    return std::make_unique<StagedBackend>(channel, std::move(members), copier_->another(),
                                           slot_bytes_);
  }

  void abort(const std::string& reason) override {
    {
      MutexLock lock(mutex_);
      if (!aborted_) aborted_ = reason;
    }
    host_.abort(reason);
  }

 private:
  // One Gloo algorithm per slot: a slot's memory never moves, so the caller's rebind is kept.
  static BufferBinding slot_binding(const BufferBinding& binding, int slot) {
    return {binding.key + "#staged" + std::to_string(slot), binding.rebind};
  }

  void reduce_chunks(void* buffer, size_t count, DataType dtype, const Step& step) {
    if (count == 0) return;
    size_t element = element_size(dtype);
    pipeline("allreduce", buffer, count * element, slot_bytes_ / element * element, true, true,
             step);
  }

  // Runs `step` on each `chunk` bytes of `device` in turn, in the two slots: chunk k + 1 travels
  // to the host and chunk k - 1 back to the device while the host works on chunk k. One stream
  // keeps the copies in order, so a slot is refilled only after its last copy-back has read it.
  void pipeline(const char* what, void* device, size_t bytes, size_t chunk, bool in, bool out,
                const Step& step) {
    guarded(what, [&] {
      std::byte* slots = chunk_slots();
      auto* dev = static_cast<std::byte*>(device);
      size_t chunks = (bytes + chunk - 1) / chunk;
      auto slot = [&](size_t k) { return slots + (k % 2) * slot_bytes_; };
      auto length = [&](size_t k) { return std::min(chunk, bytes - k * chunk); };
      if (in) copier_->to_host(slot(0), dev, length(0));
      DeviceCopier::Marker arrived = copier_->mark();
      for (size_t k = 0; k < chunks; ++k) {
        DeviceCopier::Marker current = arrived;  // chunk k is in its slot, the slot is free
        if (k + 1 < chunks) {
          if (in) copier_->to_host(slot(k + 1), dev + (k + 1) * chunk, length(k + 1));
          arrived = copier_->mark();
        }
        copier_->wait(current);
        step(slot(k), length(k), static_cast<int>(k % 2));
        if (out) copier_->to_device(dev + k * chunk, slot(k), length(k));
      }
      copier_->synchronize();
    });
  }

  void scatter(const void* input, void* output, std::span<const size_t> counts, DataType dtype,
               ReduceOp op, std::optional<double> factor) {
    size_t element = element_size(dtype);
    size_t in_bytes = total(counts) * element, out_bytes = counts[rank_] * element;
    if (in_bytes == 0) return;
    guarded("reduce_scatter", [&] {
      std::byte* in = whole(in_bytes + out_bytes);
      copy_in(in, input, in_bytes);
      host_.reduce_scatter(in, in + in_bytes, counts, dtype, op);
      if (factor) scale(in + in_bytes, counts[rank_], dtype, *factor);
      copy_out(output, in + in_bytes, out_bytes);
    });
  }

  void copy_in(std::byte* host, const void* device, size_t bytes) {
    if (bytes > 0) copier_->to_host(host, device, bytes);
    copier_->synchronize();
  }

  void copy_out(void* device, const std::byte* host, size_t bytes) {
    if (bytes > 0) copier_->to_device(device, host, bytes);
    copier_->synchronize();
  }

  // Runs one operation; whatever it throws, no copy is left in flight into or out of staging.
  template <typename Body>
  void guarded(const char* what, Body&& body) {
    check_open(what);
    try {
      body();
    } catch (...) {
      drain();
      throw;
    }
  }

  void drain() noexcept {
    try {
      copier_->synchronize();
    } catch (const std::exception&) {
      // The copier's own error was (or will be) reported by the operation that queued the copy.
    }
  }

  void check_open(const char* what) {
    MutexLock lock(mutex_);
    if (!aborted_) return;
    throw InternalError("staged " + std::string(what) + " on rank " + std::to_string(rank_) +
                        ": the backend was aborted: " + *aborted_);
  }

  std::byte* chunk_slots() {
    if (!slots_) slots_ = copier_->allocate_host(2 * slot_bytes_);
    return static_cast<std::byte*>(slots_.get());
  }

  // Staging for a whole operation: grows, never shrinks. Never null.
  std::byte* whole(size_t bytes) {
    bytes = std::max(bytes, size_t{64});
    if (bytes > whole_bytes_) {
      whole_.reset();
      whole_bytes_ = 0;
      size_t grown = std::max(bytes, whole_bytes_ * 2);
      whole_ = copier_->allocate_host(grown);
      whole_bytes_ = grown;
    }
    return static_cast<std::byte*>(whole_.get());
  }

  std::unique_ptr<Backend> owned_host_;
  Backend& host_;
  int rank_;
  int size_;
  size_t slot_bytes_;
  // Destroyed after the staging buffers that it allocated.
  std::unique_ptr<DeviceCopier> copier_;
  std::shared_ptr<void> slots_;  // two slots of slot_bytes_
  std::shared_ptr<void> whole_;
  size_t whole_bytes_ = 0;
  Mutex mutex_;
  std::optional<std::string> aborted_ GUARDED_BY(mutex_);
};

}  // namespace

std::unique_ptr<DeviceBackend> make_staged_backend(Backend& host,
                                                   std::unique_ptr<DeviceCopier> copier,
                                                   size_t chunk_bytes) {
  return std::make_unique<StagedBackend>(host, nullptr, std::move(copier), chunk_bytes);
}

}  // namespace cohort::ops
