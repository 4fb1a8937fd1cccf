// The data plane: collectives written once per transport library (Gloo and MPI on CPU memory,
// NCCL on CUDA device memory).
// The coordination engine decides what runs and in which order; a Backend only moves bytes.
// A Backend is used by one thread at a time (the background thread) and is not thread-safe,
// except abort().
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

  // Rank r sends send_counts[p] bytes to rank p (blocks taken from `input` in rank order) and
  // receives recv_counts[p] bytes from rank p (blocks written to `output` in rank order). The
  // counts are bytes; every rank's send_counts[p] equals rank p's recv_counts[r]. `output` must not
  // overlap `input` (InvalidArgument).
  virtual void alltoallv(const void* input, std::span<const size_t> send_counts, void* output,
                         std::span<const size_t> recv_counts) = 0;

  // `input` holds sum(counts) elements on every rank. Reduces them elementwise across ranks with
  // `op` (kSum, kMin, kMax or kProduct) and writes this rank's block (counts[rank] elements,
  // starting after the earlier ranks' blocks) to `output`. Every rank passes the same counts.
  // `output` must not overlap `input` (InvalidArgument).
  virtual void reduce_scatter(const void* input, void* output, std::span<const size_t> counts,
                              DataType dtype, ReduceOp op) = 0;

  // Called by exactly the ranks listed in `ranks` (sorted, distinct, in this backend's numbering),
  // never by the others: a new backend over those ranks, numbered by their position in `ranks`.
  // `key` is the same on every member and differs between the sets made from this backend.
  virtual std::unique_ptr<Backend> split(std::span<const int> ranks, const std::string& key) = 0;

  // Thread-safe, also while another thread is inside an operation: makes that operation return
  // promptly and every later one fail at once, with InternalError naming `reason`, and lets the
  // peers see this rank's connections close. The owner still destroys the backend. Backends
  // whose library cannot be interrupted (MPI) leave their operations to their own timeouts;
  // NCCL's stops at its next poll and aborts its communicator.
  virtual void abort(const std::string& reason) { (void)reason; }
};

}  // namespace cohort::ops
