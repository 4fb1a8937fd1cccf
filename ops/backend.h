// The data plane: collectives on CPU memory, written once per transport library (Gloo, MPI).
// The coordination engine decides what runs and in which order; a Backend only moves bytes.
// A Backend is used by one thread at a time (the background thread) and is not thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "cohort/types.h"

namespace cohort::ops {

// Identifies one logical buffer use the same way on every rank (e.g. a tensor name), so a backend
// can keep state bound to the buffer, such as Gloo's pre-built algorithms. `rebind` is true when
// any rank's memory for it changed since the last call: every rank then rebuilds together.
struct BufferBinding {
  std::string key;
  bool rebind = true;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In place over `count` elements. `op` is kSum, kMin, kMax or kProduct (the engine turns kAverage
  // into kSum followed by a scale). Every rank passes the same count, dtype and op.
  virtual void allreduce(void* buffer, size_t count, DataType dtype, ReduceOp op,
                         const BufferBinding& binding) = 0;

  // Copies `bytes` bytes from `root`'s buffer into every other rank's buffer.
  virtual void broadcast(void* buffer, size_t bytes, int root) = 0;

  // Rank r contributes `counts[r]` bytes from `input`; `output` receives every rank's bytes
  // concatenated in rank order (sum of counts). Every rank passes the same counts.
  virtual void allgatherv(const void* input, void* output, std::span<const size_t> counts) = 0;

  virtual void barrier() = 0;
};

}  // namespace cohort::ops
