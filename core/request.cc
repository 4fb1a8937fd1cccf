#include "core/request.h"

#include "base/wire.h"
#include "cohort/errors.h"
#include "core/response_cache.h"

namespace cohort {
namespace {

// What a control message that does not decode is called in errors: corruption of the runtime's
// own traffic, an InternalError like every failure of the control channel.
constexpr std::string_view kMalformed = "malformed control message";

template <typename Enum>
Enum checked_enum(uint8_t raw, int count, const char* what) {
  if (raw >= count) {
    throw InternalError(std::string("malformed control message: bad ") + what + " " +
                        std::to_string(raw));
  }
  return static_cast<Enum>(raw);
}

// A shape that another rank sent, after its API refused negative dimensions and sizes beyond
// int64 there: either is corruption, refused before anything computes a size from it. The count
// is num_elements' (which refuses a product beyond int64 rather than wrap); here that refusal
// names the message as malformed. `what()` names the tensor; it is called only to fail, as this
// runs for every tensor of every request.
template <typename What>
int64_t checked_elements(std::span<const int64_t> dims, DataType dtype, const What& what) {
  auto refuse = [&](const std::string& why) {
    throw InternalError("malformed control message: " + what() + " has shape " +
                        to_string(Shape(dims.begin(), dims.end())) + ", " + why);
  };
  for (int64_t d : dims) {
    if (d < 0) refuse("a negative dimension");
  }
  int64_t elements = 0;
  try {
    elements = num_elements(dims);
  } catch (const InvalidArgument&) {
    refuse("more elements than an int64 can count");
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(elements, static_cast<int64_t>(element_size(dtype)), &bytes)) {
    refuse("more bytes of " + std::string(to_string(dtype)) + " than an int64 can count");
  }
  return elements;
}

// Element counts and row counts from rank 0 size buffers on every rank: negative is corruption.
std::vector<int64_t> non_negative(std::vector<int64_t> values, const char* what) {
  for (int64_t v : values) {
    if (v < 0) {
      throw InternalError(std::string("malformed control message: a response's ") + what +
                          " include " + std::to_string(v));
    }
  }
  return values;
}

void write_batches(wire::Writer& w, const std::vector<Response::Batch>& batches) {
  w.u32(static_cast<uint32_t>(batches.size()));
  for (const auto& batch : batches) {
    w.u32(batch.tensors);
    w.u8(static_cast<uint8_t>(batch.dtype));
  }
}

std::vector<Response::Batch> read_batches(wire::Reader& rd) {
  std::vector<Response::Batch> batches;
  for (uint32_t n = rd.u32(); n > 0; --n) {
    uint32_t tensors = rd.u32();
    batches.push_back({tensors, checked_enum<DataType>(rd.u8(), kNumDataTypes, "data type")});
  }
  return batches;
}

void write_request(wire::Writer& w, const Request& r) {
  w.str(r.name);
  w.u8(static_cast<uint8_t>(r.type));
  w.u8(static_cast<uint8_t>(r.dtype));
  w.u8(static_cast<uint8_t>(r.reduce_op));
  w.i32(r.root);
  w.f64(r.prescale);
  w.f64(r.postscale);
  w.i64s(r.shape);
  w.u8(r.buffer_changed ? 1 : 0);
  w.i32(r.process_set);
  w.i32(r.device);
  r.group.write(w);
  w.i64s(r.splits);
  w.i64s(r.members);
}

Request read_request(wire::Reader& rd) {
  Request r;
  r.name = rd.str();
  r.type = checked_enum<OpType>(rd.u8(), kNumOpTypes, "op type");
  r.dtype = checked_enum<DataType>(rd.u8(), kNumDataTypes, "data type");
  r.reduce_op = checked_enum<ReduceOp>(rd.u8(), kNumReduceOps, "reduce op");
  r.root = rd.i32();
  r.prescale = rd.f64();
  r.postscale = rd.f64();
  r.shape = rd.i64s();
  checked_elements(r.shape, r.dtype, [&] { return "request '" + r.name + "'"; });
  r.buffer_changed = rd.u8() != 0;
  r.process_set = rd.i32();
  r.device = rd.i32();
  r.group = GroupSpec::read(rd);
  r.splits = rd.i64s();
  r.members = rd.i64s();
  return r;
}

}  // namespace

GroupSpec::GroupSpec(std::initializer_list<std::pair<DataType, Shape>> tensors) {
  for (const auto& [dtype, shape] : tensors) add(dtype, shape);
}

void GroupSpec::add(DataType dtype, const Shape& shape) {
  dtypes_.push_back(dtype);
  ranks_.push_back(static_cast<uint32_t>(shape.size()));
  dims_.insert(dims_.end(), shape.begin(), shape.end());
  elements_.push_back(num_elements(shape));
}

Shape GroupSpec::shape(size_t i) const {
  size_t first = 0;
  for (size_t j = 0; j < i; ++j) first += ranks_[j];
  return Shape(dims_.begin() + static_cast<ptrdiff_t>(first),
               dims_.begin() + static_cast<ptrdiff_t>(first + ranks_[i]));
}

void GroupSpec::write(wire::Writer& w) const {
  w.u32s(ranks_);
  w.i64s(dims_);
  for (DataType dtype : dtypes_) w.u8(static_cast<uint8_t>(dtype));
}

GroupSpec GroupSpec::read(wire::Reader& rd) {
  GroupSpec group;
  group.ranks_ = rd.u32s();
  group.dims_ = rd.i64s();
  size_t dims = 0;
  for (uint32_t rank : group.ranks_) dims += rank;
  if (dims != group.dims_.size()) {
    throw InternalError("malformed control message: a group's " + std::to_string(dims) +
                        " dimensions arrived as " + std::to_string(group.dims_.size()));
  }
  std::span<const int64_t> rest(group.dims_);
  for (uint32_t rank : group.ranks_) {
    DataType dtype = checked_enum<DataType>(rd.u8(), kNumDataTypes, "data type");
    auto what = [&] { return "tensor " + std::to_string(group.dtypes_.size()) + " of a group"; };
    group.elements_.push_back(checked_elements(rest.first(rank), dtype, what));
    group.dtypes_.push_back(dtype);
    rest = rest.subspan(rank);
  }
  return group;
}

std::string_view to_string(OpType type) {
  switch (type) {
    case OpType::kAllreduce:
      return "allreduce";
    case OpType::kBroadcast:
      return "broadcast";
    case OpType::kAllgather:
      return "allgather";
    case OpType::kBarrier:
      return "barrier";
    case OpType::kJoin:
      return "join";
    case OpType::kAlltoall:
      return "alltoall";
    case OpType::kReducescatter:
      return "reducescatter";
    case OpType::kAddProcessSet:
      return "add_process_set";
    case OpType::kRemoveProcessSet:
      return "remove_process_set";
  }
  return "unknown";
}

std::vector<std::byte> encode(const RequestList& list) {
  wire::Writer w;
  w.u8(list.shutdown ? 1 : 0);
  w.u64(list.applied);
  w.u32s(list.hits);
  w.u32(static_cast<uint32_t>(list.requests.size()));
  for (const auto& r : list.requests) write_request(w, r);
  return std::move(w.bytes());
}

RequestList decode_request_list(std::span<const std::byte> bytes) {
  return wire::decode<InternalError>(bytes, kMalformed, [](wire::Reader& rd) {
    RequestList list;
    list.shutdown = rd.u8() != 0;
    list.applied = rd.u64();
    list.hits = rd.u32s();
    uint32_t n = rd.u32();
    for (uint32_t i = 0; i < n; ++i) list.requests.push_back(read_request(rd));
    return list;
  });
}

std::vector<std::byte> encode(const ResponseList& list) {
  wire::Writer w;
  w.u8(list.shutdown ? 1 : 0);
  w.str(list.abort_reason);
  w.u32s(list.evicted);
  w.u32(static_cast<uint32_t>(list.responses.size()));
  for (const auto& r : list.responses) {
    w.u8(static_cast<uint8_t>(r.kind));
    w.u8(static_cast<uint8_t>(r.type));
    w.u32(static_cast<uint32_t>(r.names.size()));
    for (size_t i = 0; i < r.names.size(); ++i) {
      uint32_t id = i < r.cache_ids.size() ? r.cache_ids[i] : 0;
      w.u32(id);
      if (name_travels(id)) w.str(r.names[i]);
    }
    w.str(r.error);
    w.i32(r.process_set);
    w.i32(r.device);
    w.i64s(r.first_dims);
    w.u8(static_cast<uint8_t>(r.dtype));
    w.u8(static_cast<uint8_t>(r.reduce_op));
    w.i64s(r.counts);
    w.i64s(r.parts);
    write_batches(w, r.batches);
    w.i32(r.last_joined);
    w.u8(r.rebind ? 1 : 0);
    w.i64s(r.not_submitted);
  }
  return std::move(w.bytes());
}

namespace {
Response read_response(wire::Reader& rd) {
  Response r;
  r.kind = checked_enum<Response::Kind>(rd.u8(), 4, "response kind");
  r.type = checked_enum<OpType>(rd.u8(), kNumOpTypes, "op type");
  uint32_t names = rd.u32();
  for (uint32_t j = 0; j < names; ++j) {
    uint32_t id = rd.u32();
    r.cache_ids.push_back(id);
    r.names.push_back(name_travels(id) ? rd.str() : std::string());
  }
  r.error = rd.str();
  r.process_set = rd.i32();
  r.device = rd.i32();
  r.first_dims = non_negative(rd.i64s(), "first dimensions");
  r.dtype = checked_enum<DataType>(rd.u8(), kNumDataTypes, "data type");
  r.reduce_op = checked_enum<ReduceOp>(rd.u8(), kNumReduceOps, "reduce op");
  r.counts = non_negative(rd.i64s(), "element counts");
  r.parts = non_negative(rd.i64s(), "tensor counts");
  r.batches = read_batches(rd);
  r.last_joined = rd.i32();
  r.rebind = rd.u8() != 0;
  r.not_submitted = non_negative(rd.i64s(), "ranks that did not submit");
  return r;
}
}  // namespace

ResponseList decode_response_list(std::span<const std::byte> bytes) {
  return wire::decode<InternalError>(bytes, kMalformed, [](wire::Reader& rd) {
    ResponseList list;
    list.shutdown = rd.u8() != 0;
    list.abort_reason = rd.str();
    list.evicted = rd.u32s();
    uint32_t n = rd.u32();
    for (uint32_t i = 0; i < n; ++i) list.responses.push_back(read_response(rd));
    return list;
  });
}

}  // namespace cohort
