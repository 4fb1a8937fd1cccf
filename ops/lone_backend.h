// The backend of a world of one process (a program started without a launcher): every
// collective is the identity, so no transport is needed.
#pragma once

#include <cstring>
#include <memory>
#include <numeric>

#include "ops/backend.h"
#include "ops/backend_args.h"

namespace cohort::ops {

class LoneBackend final : public ops::Backend {
 public:
  std::string_view name() const override { return "none"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce(void*, size_t, DataType, ReduceOp, const ops::BufferBinding&) override {}
  void broadcast(void*, size_t, int) override {}
  void allgatherv(const void* input, void* output, std::span<const size_t> counts) override {
    if (input != output && counts[0] > 0) std::memcpy(output, input, counts[0]);
  }
  void barrier() override {}

  void alltoallv(const void* input, std::span<const size_t> send_counts, void* output,
                 std::span<const size_t> recv_counts) override {
    ops::check_alltoallv("alltoallv", send_counts, recv_counts, 0, 1);
    ops::check_disjoint("alltoallv", input, send_counts[0], output, recv_counts[0]);
    if (send_counts[0] > 0) std::memcpy(output, input, send_counts[0]);
  }

  void reduce_scatter(const void* input, void* output, std::span<const size_t> counts,
                      DataType dtype, ReduceOp op) override {
    ops::check_reduce_scatter("reduce_scatter", input, output, counts, dtype, op, 0, 1);
    if (counts[0] > 0) std::memcpy(output, input, counts[0] * element_size(dtype));
  }

  std::unique_ptr<ops::Backend> split(std::span<const int> ranks, const std::string&) override {
    ops::check_split("split", ranks, 0, 1);
    return std::make_unique<LoneBackend>();
  }
};

}  // namespace cohort::ops
