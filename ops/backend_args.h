// Argument checks shared by every Backend, so that each transport rejects the same mistakes with
// the same InvalidArgument before it communicates (a rank that throws here sends nothing, so the
// mistake must be made on every rank for no peer to wait).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "cohort/types.h"

namespace cohort::ops {

// `what` names the backend and operation in messages, e.g. "Gloo reduce_scatter".

// One count per rank.
void check_rank_counts(std::string_view what, std::span<const size_t> counts, int size);

// A broadcast's root is a rank: within [0, size).
void check_root(std::string_view what, int root, int size);

// kSum, kMin, kMax or kProduct (the engine turns kAverage into a sum and a scale).
void check_reduce_op(std::string_view what, ReduceOp op);

// Both count lists have one entry per rank, and what this rank sends itself equals what it
// receives from itself.
void check_alltoallv(std::string_view what, std::span<const size_t> send_counts,
                     std::span<const size_t> recv_counts, int rank, int size);

// One count per rank, a reducing op, and an output that does not overlap the input. Returns the
// element offset of this rank's block in the input.
size_t check_reduce_scatter(std::string_view what, const void* input, const void* output,
                            std::span<const size_t> counts, DataType dtype, ReduceOp op, int rank,
                            int size);

// `ranks` is sorted, distinct, within [0, size) and holds `rank`. Returns `rank`'s position in it,
// its rank in the new backend.
int check_split(std::string_view what, std::span<const int> ranks, int rank, int size);

// Throws unless [a, a + a_bytes) and [b, b + b_bytes) are disjoint.
void check_disjoint(std::string_view what, const void* a, size_t a_bytes, const void* b,
                    size_t b_bytes);

// A 64-bit FNV-1a hash: the same on every rank and every build, unlike std::hash. Used to derive
// tags that every member of a split computes alike from the split's key.
uint64_t stable_hash(std::string_view text, uint64_t seed = 14695981039346656037ull);

}  // namespace cohort::ops
