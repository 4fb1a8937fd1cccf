// What ranks tell the coordinator (Request, RequestList) and what it tells them back (Response,
// ResponseList). Requests name a tensor and describe it; responses say which named tensors every
// rank executes next, in which order, or why a tensor cannot run.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/wire.h"
#include "cohort/types.h"

namespace cohort {

enum class OpType : uint8_t {
  kAllreduce,
  kBroadcast,
  kAllgather,
  kBarrier,
  kJoin,
  kAlltoall,
  kReducescatter,
  kAddProcessSet,
  kRemoveProcessSet,
};
inline constexpr int kNumOpTypes = 9;
std::string_view to_string(OpType type);

// The tensors of a grouped allreduce, in order, as every rank must describe them. Kept flat, so
// that a request of a thousand tensors copies and compares as four arrays, not a thousand shapes.
class GroupSpec {
 public:
  GroupSpec() = default;
  GroupSpec(std::initializer_list<std::pair<DataType, Shape>> tensors);

  void add(DataType dtype, const Shape& shape);
  size_t size() const { return dtypes_.size(); }
  bool empty() const { return dtypes_.empty(); }
  DataType dtype(size_t i) const { return dtypes_[i]; }
  int64_t elements(size_t i) const { return elements_[i]; }
  Shape shape(size_t i) const;  // linear in i: for messages

  void write(wire::Writer& w) const;
  // Throws InternalError for a corrupt encoding.
  static GroupSpec read(wire::Reader& rd);

  friend bool operator==(const GroupSpec&, const GroupSpec&) = default;

 private:
  std::vector<DataType> dtypes_;
  std::vector<uint32_t> ranks_;  // how many dimensions each tensor has
  std::vector<int64_t> dims_;    // every tensor's dimensions, one after the other
  std::vector<int64_t> elements_;
};

struct Request {
  std::string name;
  OpType type = OpType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp reduce_op = ReduceOp::kSum;
  int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  Shape shape;
  // This rank's memory differs from the last submission of this name (see ops::BufferBinding).
  bool buffer_changed = true;
  // The process set the collective runs over (0: every rank).
  int32_t process_set = 0;
  // The CUDA device of the tensor (kCpuDevice for host memory).
  int32_t device = kCpuDevice;
  // A grouped allreduce travels as one request named after the group: its tensors, in order
  // (empty for anything else). `dtype` is then its first tensor's and `shape` is unused.
  GroupSpec group;
  // Alltoall: rows of the first dimension sent to each rank of the set.
  std::vector<int64_t> splits;
  // Adding a process set: its member ranks. Removing one: its id, alone.
  std::vector<int64_t> members;

  friend bool operator==(const Request&, const Request&) = default;
};

// The tensors an allreduce request reduces: its own, or each of its group's.
inline size_t num_tensors(const Request& r) {
  return r.group.empty() ? 1 : r.group.size();
}
inline DataType tensor_dtype(const Request& r, size_t i) {
  return r.group.empty() ? r.dtype : r.group.dtype(i);
}
inline int64_t tensor_elements(const Request& r, size_t i) {
  return r.group.empty() ? num_elements(r.shape) : r.group.elements(i);
}

struct RequestList {
  std::vector<Request> requests;
  // Submissions the response cache knows, as it encodes them (core/response_cache.h).
  std::vector<uint32_t> hits;
  bool shutdown = false;  // this rank has asked to shut down
  uint64_t applied = 0;   // how many response lists this rank has applied
};

struct Response {
  // kError: the ranks disagree (MismatchError); kStalled: not every rank submitted in time
  // (StallError); kPeerLeft: a rank that must take part has shut down (InternalError: the world
  // is broken, so elastic::run recovers from it).
  enum class Kind : uint8_t { kExecute, kError, kStalled, kPeerLeft };
  Kind kind = Kind::kExecute;
  OpType type = OpType::kAllreduce;
  std::vector<std::string> names;
  // Parallel to names when not empty: response-cache ids (see core/response_cache.h). On the
  // wire a name whose id is known is sent as the id alone.
  std::vector<uint32_t> cache_ids;
  std::string error;
  int32_t process_set = 0;
  int32_t device = kCpuDevice;
  // For allgather: every member's first dimension, in set-rank order. For alltoall: the rows
  // member i sends to member j at [i * set size + j].
  std::vector<int64_t> first_dims;
  // For allreduce: the element type, operator and each tensor's element count (a grouped
  // allreduce has one per tensor), so that a rank that has joined can contribute the operator's
  // identity for tensors it never submitted.
  DataType dtype = DataType::kFloat32;
  ReduceOp reduce_op = ReduceOp::kSum;
  std::vector<int64_t> counts;
  // Parallel to names when some name has several tensors (a group): how many of `counts` are
  // each name's. Empty: one each.
  std::vector<int64_t> parts;
  // How the allreduce's tensors are reduced, in order: each batch is `tensors` consecutive
  // tensors of one type, packed into the fusion buffer (or reduced in place when alone). Empty:
  // one batch of every tensor, of `dtype`.
  struct Batch {
    uint32_t tensors = 0;
    DataType dtype = DataType::kFloat32;
    friend bool operator==(const Batch&, const Batch&) = default;
  };
  std::vector<Batch> batches;
  // For join: the rank that joined last.
  int32_t last_joined = -1;
  // Some rank's memory changed since the name last ran.
  bool rebind = true;
  // For a failure of a name that not every rank submitted (kStalled, kPeerLeft, a removed set's
  // kError): the global ranks that had not submitted it. They have nothing to fail: an entry of
  // that name there was submitted after the failure was decided, and must not take it.
  std::vector<int64_t> not_submitted;
};

struct ResponseList {
  std::vector<Response> responses;
  bool shutdown = false;  // every rank has asked to shut down: stop after these responses
  // Non-empty when rank 0 has failed: why. Receivers fail with this reason.
  std::string abort_reason;
  // Response-cache ids evicted by this list.
  std::vector<uint32_t> evicted;
};

std::vector<std::byte> encode(const RequestList& list);
RequestList decode_request_list(std::span<const std::byte> bytes);
std::vector<std::byte> encode(const ResponseList& list);
ResponseList decode_response_list(std::span<const std::byte> bytes);

}  // namespace cohort
