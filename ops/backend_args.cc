#include "ops/backend_args.h"

#include <cstdint>
#include <numeric>
#include <string>

#include "cohort/errors.h"

namespace cohort::ops {
namespace {

[[noreturn]] void fail(std::string_view what, const std::string& why) {
  throw InvalidArgument(std::string(what) + ": " + why);
}

}  // namespace

void check_rank_counts(std::string_view what, std::span<const size_t> counts, int size) {
  if (counts.size() != static_cast<size_t>(size)) {
    fail(what, std::to_string(counts.size()) + " counts for " + std::to_string(size) + " ranks");
  }
}

void check_root(std::string_view what, int root, int size) {
  if (root < 0 || root >= size) {
    fail(what, "root " + std::to_string(root) + " is not a rank of " + std::to_string(size));
  }
}

void check_reduce_op(std::string_view what, ReduceOp op) {
  if (op == ReduceOp::kAverage) fail(what, "average is a sum followed by a scale");
  if (static_cast<int>(op) >= kNumReduceOps) {
    fail(what, "unknown reduce op " + std::to_string(static_cast<int>(op)));
  }
}

void check_alltoallv(std::string_view what, std::span<const size_t> send_counts,
                     std::span<const size_t> recv_counts, int rank, int size) {
  check_rank_counts(what, send_counts, size);
  check_rank_counts(what, recv_counts, size);
  if (send_counts[rank] != recv_counts[rank]) {
    fail(what, "rank " + std::to_string(rank) + " sends itself " +
                   std::to_string(send_counts[rank]) + " bytes but receives " +
                   std::to_string(recv_counts[rank]));
  }
}

size_t check_reduce_scatter(std::string_view what, const void* input, const void* output,
                            std::span<const size_t> counts, DataType dtype, ReduceOp op, int rank,
                            int size) {
  check_rank_counts(what, counts, size);
  check_reduce_op(what, op);
  size_t element = element_size(dtype);
  size_t offset = std::accumulate(counts.begin(), counts.begin() + rank, size_t{0});
  size_t total = std::accumulate(counts.begin() + rank, counts.end(), offset);
  check_disjoint(what, input, total * element, output, counts[rank] * element);
  return offset;
}

int check_split(std::string_view what, std::span<const int> ranks, int rank, int size) {
  int position = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size) {
      fail(what,
           "rank " + std::to_string(ranks[i]) + " is not in a world of " + std::to_string(size));
    }
    if (i > 0 && ranks[i] <= ranks[i - 1]) fail(what, "the ranks must be sorted and distinct");
    if (ranks[i] == rank) position = static_cast<int>(i);
  }
  if (position < 0) {
    fail(what, "rank " + std::to_string(rank) + " called split but is not one of the ranks");
  }
  return position;
}

void check_disjoint(std::string_view what, const void* a, size_t a_bytes, const void* b,
                    size_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return;
  auto x = reinterpret_cast<uintptr_t>(a);
  auto y = reinterpret_cast<uintptr_t>(b);
  if (x < y + b_bytes && y < x + a_bytes) fail(what, "the output overlaps the input");
}

uint64_t stable_hash(std::string_view text, uint64_t seed) {
  uint64_t hash = seed;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace cohort::ops
