#include "core/request.h"

#include "base/wire.h"
#include "cohort/errors.h"
#include "core/cache_wire.h"
#include "core/response_cache.h"

namespace cohort {
namespace {

// What a control message that does not decode is called in errors: corruption of the runtime's
// own traffic, an InternalError like every failure of the control channel.
constexpr std::string_view kMalformed = "malformed control message";

// The first byte of every request and response list: the format this build speaks. Builds before
// format 2 began with the shutdown flag (0 or 1), so they are told apart too; a list in another
// format is refused, never misread.
constexpr uint8_t kFormat = 0xC2;

void check_format(wire::Reader& rd) {
  uint8_t format = rd.u8();
  if (format != kFormat) {
    throw wire::MalformedBytes("format " + std::to_string(format) + ", but this build speaks " +
                               std::to_string(kFormat) + " (a peer from another build of cohort?)");
  }
}

// Which of a response's optional fields follow it on the wire.
enum ResponseField : uint8_t {
  kRebind = 1,
  kError = 2,
  kFirstDims = 4,
  kCounts = 8,
  kParts = 16,
  kBatches = 32,
  kNotSubmitted = 64,
};

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
  w.u8(kFormat);
  w.u8(list.shutdown ? 1 : 0);
  w.varint(list.applied);
  check_id_count(list.hits.size(), "a request list's cache hits");
  write_hits(w, list.hits);
  w.varint(list.requests.size());
  for (const auto& r : list.requests) write_request(w, r);
  return std::move(w.bytes());
}

RequestList decode_request_list(std::span<const std::byte> bytes) {
  return wire::decode<InternalError>(bytes, kMalformed, [](wire::Reader& rd) {
    check_format(rd);
    RequestList list;
    list.shutdown = rd.u8() != 0;
    list.applied = rd.varint();
    IdBudget budget;
    list.hits = read_hits(rd, budget);
    for (uint64_t n = rd.varcount("a list of requests"); n > 0; --n) {
      list.requests.push_back(read_request(rd));
    }
    return list;
  });
}

namespace {

uint8_t fields_of(const Response& r) {
  bool counts = !counts_known(r);  // else the receiver's CacheView rebuilds counts and parts
  return (r.rebind ? kRebind : 0) | (r.error.empty() ? 0 : kError) |
         (r.first_dims.empty() ? 0 : kFirstDims) | (counts && !r.counts.empty() ? kCounts : 0) |
         (counts && !r.parts.empty() ? kParts : 0) | (r.batches.empty() ? 0 : kBatches) |
         (r.not_submitted.empty() ? 0 : kNotSubmitted);
}

void write_response(wire::Writer& w, const Response& r) {
  w.u8(static_cast<uint8_t>(r.kind));
  w.u8(static_cast<uint8_t>(r.type));
  write_names(w, r);
  uint8_t fields = fields_of(r);
  w.u8(fields);
  w.i32(r.process_set);
  w.i32(r.device);
  w.u8(static_cast<uint8_t>(r.dtype));
  w.u8(static_cast<uint8_t>(r.reduce_op));
  w.i32(r.last_joined);
  if (fields & kError) w.str(r.error);
  if (fields & kFirstDims) w.i64s(r.first_dims);
  if (fields & kCounts) w.i64s(r.counts);
  if (fields & kParts) w.i64s(r.parts);
  if (fields & kBatches) write_batches(w, r.batches);
  if (fields & kNotSubmitted) w.i64s(r.not_submitted);
}

Response read_response(wire::Reader& rd, IdBudget& budget) {
  Response r;
  r.kind = checked_enum<Response::Kind>(rd.u8(), 4, "response kind");
  r.type = checked_enum<OpType>(rd.u8(), kNumOpTypes, "op type");
  read_names(rd, r, budget);
  uint8_t fields = rd.u8();
  r.process_set = rd.i32();
  r.device = rd.i32();
  r.dtype = checked_enum<DataType>(rd.u8(), kNumDataTypes, "data type");
  r.reduce_op = checked_enum<ReduceOp>(rd.u8(), kNumReduceOps, "reduce op");
  r.last_joined = rd.i32();
  r.rebind = (fields & kRebind) != 0;
  if (fields & kError) r.error = rd.str();
  if (fields & kFirstDims) r.first_dims = non_negative(rd.i64s(), "first dimensions");
  if (fields & kCounts) r.counts = non_negative(rd.i64s(), "element counts");
  if (fields & kParts) r.parts = non_negative(rd.i64s(), "tensor counts");
  if (fields & kBatches) r.batches = read_batches(rd);
  if (fields & kNotSubmitted) {
    r.not_submitted = non_negative(rd.i64s(), "ranks that did not submit");
  }
  return r;
}

}  // namespace

std::vector<std::byte> encode(const ResponseList& list) {
  wire::Writer w;
  w.u8(kFormat);
  w.u8(list.shutdown ? 1 : 0);
  w.str(list.abort_reason);
  w.varint(list.evicted.size());
  for (uint32_t id : list.evicted) w.varint(id);
  size_t names = 0;
  for (const auto& r : list.responses) names += r.names.size();
  check_id_count(names, "a response list's names");
  w.varint(list.responses.size());
  for (const auto& r : list.responses) write_response(w, r);
  return std::move(w.bytes());
}

ResponseList decode_response_list(std::span<const std::byte> bytes) {
  return wire::decode<InternalError>(bytes, kMalformed, [](wire::Reader& rd) {
    check_format(rd);
    ResponseList list;
    list.shutdown = rd.u8() != 0;
    list.abort_reason = rd.str();
    for (uint64_t n = rd.varcount("a list of evicted ids"); n > 0; --n) {
      uint64_t id = rd.varint();
      if (id == 0 || id > UINT32_MAX)
        throw wire::MalformedBytes("evicted id " + std::to_string(id));
      list.evicted.push_back(static_cast<uint32_t>(id));
    }
    IdBudget budget;  // the names of every response together
    for (uint64_t n = rd.varcount("a list of responses"); n > 0; --n) {
      list.responses.push_back(read_response(rd, budget));
    }
    return list;
  });
}

}  // namespace cohort
