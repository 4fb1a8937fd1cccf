// The collectives among the members of a ShmGroup (ops/shm_group.h), one algorithm per file
// (shm_reduce.cc, shm_broadcast.cc, shm_allgather.cc, shm_alltoall.cc). Each is a sequence of
// steps of at most a slot per member: members copy their part in, meet, and copy out what they
// need; a reduction meets once more in between, each member reducing its share of the step so
// that every core does a part. The callers (ops/shm_backend.cc) have checked the arguments, which
// are the same on every member.
#pragma once

#include <cstddef>
#include <cstring>
#include <functional>
#include <span>
#include <string_view>

#include "cohort/types.h"
#include "ops/shm_group.h"

namespace cohort::ops::shm {

// memcpy that accepts the null pointers of empty buffers when there is nothing to copy.
inline void copy_bytes(void* to, const void* from, size_t bytes) {
  if (bytes != 0) std::memcpy(to, from, bytes);
}

// Receives each reduced piece, in order: its first element, its element count, its values (valid
// until the call returns).
using TakeReduced = std::function<void(size_t first, size_t count, const std::byte* values)>;

// Reduces every member's `count` elements of `input` with `op` and hands the result to `take` on
// every member. `what` names the collective in messages.
void reduce(ShmGroup& group, std::string_view what, const void* input, size_t count, DataType dtype,
            ReduceOp op, const TakeReduced& take);

// reduce() whose result replaces `buffer`'s `count` elements on every member.
void allreduce(ShmGroup& group, void* buffer, size_t count, DataType dtype, ReduceOp op);

void broadcast(ShmGroup& group, void* buffer, size_t bytes, int root);

void allgatherv(ShmGroup& group, const void* input, void* output, std::span<const size_t> counts);

// Every member's send and receive counts meet first, so that a pair that disagrees fails on
// every member alike (InvalidArgument) rather than leaving one waiting.
void alltoallv(ShmGroup& group, const void* input, std::span<const size_t> send_counts,
               void* output, std::span<const size_t> recv_counts);

}  // namespace cohort::ops::shm
