#include "ops/gloo_reduce_scatter.h"

#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>

#include "cohort/errors.h"
#include "ops/reduce.h"

namespace cohort::ops {
namespace {

using gloo::transport::UnboundBuffer;

// Gloo's own collectives use slot prefixes 0x01-0x08 (gloo/types.h); a prefix of our own keeps
// these transfers apart from theirs even where tags coincide.
constexpr uint8_t kReduceScatterSlotPrefix = 0x40;

// Gloo throws IoException when a wait times out and returns false only when the wait was
// aborted (the backend's wait breaker, after an abort).
void wait_recv(UnboundBuffer& buffer, std::chrono::milliseconds timeout) {
  if (!buffer.waitRecv(timeout)) throw InternalError("Gloo reduce_scatter: a receive was aborted");
}

void wait_send(UnboundBuffer& buffer, std::chrono::milliseconds timeout) {
  if (!buffer.waitSend(timeout)) throw InternalError("Gloo reduce_scatter: a send was aborted");
}

// Where one side of a ring step reads or writes: a buffer and a byte offset in it.
struct Place {
  UnboundBuffer* buffer;
  size_t offset;
  std::byte* data() const { return static_cast<std::byte*>(buffer->ptr) + offset; }
};

}  // namespace

// The ring moves half the bytes of an allreduce, but on this 2-vCPU VM Gloo's point-to-point
// transfers stall on the 4 ms scheduler tick when the machine is busy (see
// shared/research/environment.md §4 on the new-API ring), and the ring takes P - 1 such steps.
// `build/bin/gloo_reduce_scatter_bench <ranks>`, float32 sum, equal blocks, us per op, median
// of 5-7 interleaved trials (allreduce = copy + cached halving-doubling + copy / ring):
//   2 ranks, load 4.6:  4 KiB 178/124   256 KiB 382/182    1 MiB 1006/239   4 MiB 5193/1840
//                      16 MiB 16690/6241   64 MiB 64300/25745
//   2 ranks, load 13:  4 KiB 704/3768  256 KiB 947/1647   1 MiB 1197/484   4 MiB 8310/3477
//   3 ranks, load 5:   4 KiB 332/1323  256 KiB 546/951    1 MiB 1306/1002  4 MiB 7160/3281
//                      16 MiB 25887/11994  64 MiB 91327/46783
//   3 ranks, load 13:  4 KiB 653/4119  256 KiB 754/4046   1 MiB 1555/4054  4 MiB 15031/6625
//   4 ranks, load 10:  4 KiB 1337/2756 256 KiB 2695/5553  1 MiB 3158/5838  4 MiB 16031/8593
//                      64 MiB 425454/164391
// The allreduce is steady below 1 MiB while the ring's latency depends on the load; from 4 MiB
// the ring wins in every run (2-3x at 64 MiB). Between them the results are mixed: the switch
// sits at 2 MiB.
bool gloo_reduce_scatter_uses_ring(size_t total_bytes, int ranks) {
  constexpr size_t kRingFromBytes = size_t{2} << 20;
  return ranks > 1 && total_bytes >= kRingFromBytes;
}

void run_gloo_ring_reduce_scatter(const std::shared_ptr<gloo::Context>& context, const void* input,
                                  void* output, std::span<const size_t> counts, DataType dtype,
                                  ReduceOp op, uint32_t tag, std::vector<std::byte>& scratch,
                                  GlooWaitBreaker::InFlight& in_flight) {
  const int size = context->size;
  const int rank = context->rank;
  const size_t element = element_size(dtype);
  std::vector<size_t> offsets(counts.size() + 1, 0);  // in bytes
  for (size_t b = 0; b < counts.size(); ++b) offsets[b + 1] = offsets[b] + counts[b] * element;
  // Blocks travel through scratch only on rings of three or more; two halves, so that one
  // step's incoming block never lands on the block the same step sends out.
  const size_t half = size > 2 ? *std::max_element(counts.begin(), counts.end()) * element : 0;
  if (scratch.size() < 2 * half) scratch.resize(2 * half);

  // Gloo only reads from `input`, but its buffers take mutable pointers.
  auto in = context->createUnboundBuffer(const_cast<void*>(input), offsets.back());
  auto out = context->createUnboundBuffer(output, counts[rank] * element);
  std::unique_ptr<UnboundBuffer> halves[2] = {
      context->createUnboundBuffer(scratch.data(), half),
      context->createUnboundBuffer(scratch.data() + half, half)};
  GlooWaitBreaker::Watch watch(in_flight, {in.get(), out.get(), halves[0].get(), halves[1].get()});
  const auto slot = gloo::Slot::build(kReduceScatterSlotPrefix, tag);
  const auto timeout = context->getTimeout();
  const int right = (rank + 1) % size;
  const int left = (rank + size - 1) % size;
  auto block = [&](int back) { return ((rank - back) % size + size) % size; };

  // Step s sends block r-1-s (this rank's own input for s = 0, else the partial result received
  // at step s-1) and receives block r-2-s, into which it reduces its own input. After P-1 steps
  // the block received is r's, with every rank's contribution.
  for (int s = 0; s + 1 < size; ++s) {
    const int sent = block(s + 1);
    const int received = block(s + 2);
    const bool last = s + 2 == size;
    Place from = s == 0 ? Place{in.get(), offsets[sent]} : Place{halves[(s + 1) % 2].get(), 0};
    Place to = last ? Place{out.get(), 0} : Place{halves[s % 2].get(), 0};
    const size_t send_bytes = counts[sent] * element;
    const size_t recv_bytes = counts[received] * element;
    // Every rank knows every count, so both ends of an empty transfer skip it alike.
    if (send_bytes > 0) from.buffer->send(right, slot, from.offset, send_bytes);
    if (recv_bytes > 0) to.buffer->recv(left, slot, to.offset, recv_bytes);
    if (recv_bytes > 0) {
      wait_recv(*to.buffer, timeout);
      const auto* mine = static_cast<const std::byte*>(input) + offsets[received];
      reduce_into(to.data(), mine, counts[received], dtype, op);
    }
    if (send_bytes > 0) wait_send(*from.buffer, timeout);
  }
}

}  // namespace cohort::ops
