// What ranks tell the coordinator (Request, RequestList) and what it tells them back (Response,
// ResponseList). Requests name a tensor and describe it; responses say which named tensors every
// rank executes next, in which order, or why a tensor cannot run.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cohort/types.h"

namespace cohort {

enum class OpType : uint8_t { kAllreduce, kBroadcast, kAllgather, kBarrier };
std::string_view to_string(OpType type);

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

  friend bool operator==(const Request&, const Request&) = default;
};

struct RequestList {
  std::vector<Request> requests;
  bool shutdown = false;  // this rank has asked to shut down
};

struct Response {
  // kError: the ranks disagree (MismatchError); kStalled: not every rank submitted in time.
  enum class Kind : uint8_t { kExecute, kError, kStalled };
  Kind kind = Kind::kExecute;
  OpType type = OpType::kAllreduce;
  std::vector<std::string> names;
  std::string error;
  // For allgather: every rank's first dimension, in rank order.
  std::vector<int64_t> first_dims;
  // Some rank's memory changed since the name last ran.
  bool rebind = true;
};

struct ResponseList {
  std::vector<Response> responses;
  bool shutdown = false;  // every rank has asked to shut down: stop after these responses
  // Non-empty when rank 0 has failed: why. Receivers fail with this reason.
  std::string abort_reason;
};

std::vector<std::byte> encode(const RequestList& list);
RequestList decode_request_list(std::span<const std::byte> bytes);
std::vector<std::byte> encode(const ResponseList& list);
ResponseList decode_response_list(std::span<const std::byte> bytes);

}  // namespace cohort
