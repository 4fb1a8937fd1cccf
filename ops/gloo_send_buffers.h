// Sizes the send buffer of every pair of a new Gloo context before its first collective.
//
// Gloo (0.0~git20220518, tcp transport) sets a pair's SO_SNDBUF from the size of the first
// bound-buffer message it sends, and later only grows it. Setting it also turns off the kernel's
// autotuning of that buffer. When the first such message is small (any legacy allreduce of a few
// bytes), the socket keeps a few KiB of send buffer for good. From then on every unbound-buffer
// transfer larger than that crawls: that is broadcast, allgather, alltoall, barrier and the
// reduce-scatter ring. Each refill of the send buffer waits for a tick of Gloo's 10 ms event
// loop. Measured on 2 ranks: a 2 MiB broadcast took 1.1 s after an 8-byte allreduce, and 0.6 ms
// after a 256 KiB one.
#pragma once

#include <gloo/context.h>

namespace cohort::ops {

// Bytes every rank sends every other rank once, so that Gloo sizes the send buffers for it first:
// twice this is what the kernel then gives them.
inline constexpr size_t kGlooSendBufferWarmUp = size_t{256} << 10;

// Collective over `context`'s ranks, before anything else uses the context. Throws what Gloo
// throws (callers turn it into InternalError with gloo_guard).
void size_gloo_send_buffers(gloo::Context& context);

}  // namespace cohort::ops
