// Hostile and mistaken bytes in the decoders: every length is checked against what remains before
// anything is allocated, and every element count against int64 overflow. This binary records the
// largest allocation made while a decoder runs, so a length that makes a short message allocate
// megabytes fails here even when the decoder throws afterwards: through the sanitizers' malloc
// hook in ASan and TSan builds (which own operator new there), by replacing the global operator
// new otherwise.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "allocation_hook.h"
#include "base/wire.h"
#include "cohort/errors.h"
#include "cohort/types.h"
#include "core/request.h"

namespace {
std::atomic<bool> tracking{false};
std::atomic<size_t> largest{0};

void record(size_t n) {
  if (!tracking.load(std::memory_order_relaxed)) return;
  size_t seen = largest.load(std::memory_order_relaxed);
  while (n > seen && !largest.compare_exchange_weak(seen, n)) {
  }
}
}  // namespace

#ifdef COHORT_SANITIZED
// From the sanitizers' <sanitizer/allocator_interface.h>, which GCC does not install.
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*,
                                                                             size_t),
                                                         void (*free_hook)(const volatile void*));

namespace {
const bool hooked = [] {
  __sanitizer_install_malloc_and_free_hooks([](const volatile void*, size_t n) { record(n); },
                                            [](const volatile void*) {});
  return true;
}();
}  // namespace
#endif

void on_allocation(size_t bytes) {
  record(bytes);
}

using namespace cohort;

namespace {

std::vector<std::byte> bytes_of(wire::Writer& w) {
  return w.bytes();
}

// Runs a decoder that must refuse its input with a `Refusal`; returns the error text and checks
// that it allocated no more than `limit` bytes at once on the way.
template <typename Refusal = InternalError, typename F>
std::string refusal(F&& decode, size_t limit = 4096) {
  std::string message;
  largest = 0;
  tracking = true;
  try {
    decode();
  } catch (const Refusal& e) {
    message = e.what();
  }
  tracking = false;
  CHECK(largest <= limit);
  return message;
}

constexpr int64_t k2to32 = int64_t{1} << 32;

}  // namespace

TEST_CASE("a string length beyond the message is refused before allocating") {
  // A control hello (rank, token) whose token claims 64 MiB: 17 bytes.
  wire::Writer w;
  w.i32(1);
  w.u64(64u << 20);
  for (int i = 0; i < 5; ++i) w.u8('x');
  auto bytes = bytes_of(w);
  REQUIRE(bytes.size() == 17);
  std::string message = refusal<wire::MalformedBytes>([&] {
    wire::Reader rd(bytes);
    rd.i32();
    rd.str();
  });
  CHECK_THAT(message, Catch::Matchers::Contains("a string of 67108864 bytes at offset 12") &&
                          Catch::Matchers::Contains("only 5 remain"));
}

TEST_CASE("a list length beyond the message is refused before allocating") {
  // 2^26 uint32 (256 MiB) and int64 (512 MiB) claimed in 17 bytes.
  for (bool wide : {false, true}) {
    wire::Writer w;
    w.u64(1u << 26);
    for (int i = 0; i < 9; ++i) w.u8(0);
    auto bytes = bytes_of(w);
    REQUIRE(bytes.size() == 17);
    std::string message = refusal<wire::MalformedBytes>([&] {
      wire::Reader rd(bytes);
      if (wide) {
        rd.i64s();
      } else {
        rd.u32s();
      }
    });
    CHECK_THAT(message, Catch::Matchers::Contains("a list of 67108864 numbers") &&
                            Catch::Matchers::Contains("only 9 remain"));
  }
}

TEST_CASE("lengths that fit are read whole, including the largest and empty ones") {
  wire::Writer w;
  w.str("");
  w.str(std::string(1000, 'a'));
  w.i64s({1, 2, 3});
  w.u32s({});
  auto bytes = bytes_of(w);
  wire::Reader rd(bytes);
  CHECK(rd.str().empty());
  CHECK(rd.str() == std::string(1000, 'a'));
  CHECK(rd.i64s() == std::vector<int64_t>{1, 2, 3});
  CHECK(rd.u32s().empty());
  CHECK(rd.done());
}

TEST_CASE("hostile list counts in request and response lists allocate no more than they hold") {
  // Hit runs: a count of 2^30 after the format, shutdown and applied.
  wire::Writer hostile;
  hostile.u8(0xC2);
  hostile.u8(0);
  hostile.varint(0);
  hostile.varint(uint64_t{1} << 30);
  CHECK_THAT(refusal([&] { decode_request_list(bytes_of(hostile)); }),
             Catch::Matchers::Contains("a list of hit runs of 1073741824 items"));

  ResponseList responses;
  responses.abort_reason = "x";
  auto rbytes = encode(responses);
  auto hostile_reason = rbytes;
  hostile_reason[2 + 3] = std::byte{0x10};  // after format and shutdown: it claims 256 MiB
  CHECK_THAT(refusal([&] { decode_response_list(hostile_reason); }),
             Catch::Matchers::Contains("a string of 268435457 bytes"));
}

TEST_CASE("num_elements refuses a product beyond int64 instead of wrapping") {
  CHECK(num_elements({}) == 1);
  CHECK(num_elements({2, 3}) == 6);
  CHECK(num_elements({k2to32 / 2, k2to32 / 2}) == int64_t{1} << 62);
  CHECK(num_elements({std::numeric_limits<int64_t>::max()}) == std::numeric_limits<int64_t>::max());
  // A zero dimension empties the tensor whatever the others are.
  CHECK(num_elements({k2to32, k2to32, 0}) == 0);
  // {2^32, 2^32} wrapped to 0 elements before.
  CHECK_THROWS_MATCHES(num_elements({k2to32, k2to32}), InvalidArgument,
                       Catch::Matchers::Message("shape [4294967296, 4294967296] holds more "
                                                "elements than an int64 can count"));
  CHECK_THROWS_AS(num_elements({k2to32, k2to32 / 2, 2}), InvalidArgument);
  std::vector<float> none;
  CHECK_THROWS_AS(Tensor::of(std::span<float>(none), {k2to32, k2to32}), InvalidArgument);
  GroupSpec group;
  CHECK_THROWS_AS(group.add(DataType::kFloat32, {k2to32, k2to32}), InvalidArgument);
}

TEST_CASE("num_elements counts dimensions wherever they are stored") {
  // A group keeps its tensors' dimensions one after the other: each is counted in place.
  const Shape packed = {2, 3, 4, k2to32, k2to32};
  std::span<const int64_t> dims(packed);
  CHECK(num_elements(dims.first(2)) == 6);
  CHECK(num_elements(dims.subspan(2, 1)) == 4);
  CHECK(num_elements(dims.first(0)) == 1);
  CHECK_THROWS_MATCHES(num_elements(dims.last(2)), InvalidArgument,
                       Catch::Matchers::Message("shape [4294967296, 4294967296] holds more "
                                                "elements than an int64 can count"));
  CHECK(num_elements(Shape{2, 3}) == num_elements(dims.first(2)));
}

namespace {

// A request list holding one grouped request whose only tensor has `shape`.
std::vector<std::byte> group_request(DataType dtype, const Shape& shape) {
  // Encode a harmless shape of the same rank, then overwrite its dimensions: the encoder goes
  // through GroupSpec::add, which refuses the shapes tested here.
  Shape harmless(shape.size(), 1);
  RequestList list;
  list.requests.push_back(Request{.name = "g", .group = {{dtype, harmless}}});
  auto bytes = encode(list);
  // After the group's dimensions: its one type (1), empty splits and members (8 + 8).
  size_t dims_at = bytes.size() - 8 - 8 - 1 - 8 * shape.size();
  std::memcpy(bytes.data() + dims_at, shape.data(), 8 * shape.size());
  return bytes;
}

// A request list holding one request of `shape`, written past the API's checks.
std::vector<std::byte> plain_request(DataType dtype, const Shape& shape) {
  RequestList list;
  list.requests.push_back(Request{.name = "big", .dtype = dtype, .shape = shape});
  return encode(list);  // the encoder does not compute sizes
}

}  // namespace

TEST_CASE("a group tensor whose element count overflows int64 is refused, not reduced as 0") {
  CHECK(decode_request_list(group_request(DataType::kUInt8, {k2to32 / 2, k2to32 / 2}))
            .requests[0]
            .group.elements(0) == int64_t{1} << 62);
  CHECK(decode_request_list(group_request(DataType::kFloat32, {k2to32, k2to32, 0}))
            .requests[0]
            .group.elements(0) == 0);
  CHECK_THROWS_MATCHES(
      decode_request_list(group_request(DataType::kFloat32, {k2to32, k2to32})), InternalError,
      Catch::Matchers::Message("malformed control message: tensor 0 of a group has shape "
                               "[4294967296, 4294967296], more elements than an int64 can count"));
  CHECK_THROWS_WITH(decode_request_list(group_request(DataType::kFloat64, {int64_t{1} << 61})),
                    Catch::Matchers::Contains("more bytes of float64 than an int64 can count"));
  CHECK_THROWS_WITH(decode_request_list(group_request(DataType::kFloat32, {4, -1})),
                    Catch::Matchers::Contains("tensor 0 of a group has shape [4, -1], a "
                                              "negative dimension"));
}

TEST_CASE("a request shape whose element count overflows int64 is refused") {
  CHECK(decode_request_list(plain_request(DataType::kUInt8, {std::numeric_limits<int64_t>::max()}))
            .requests[0]
            .shape.size() == 1);
  CHECK_THROWS_MATCHES(
      decode_request_list(plain_request(DataType::kFloat32, {k2to32, k2to32})), InternalError,
      Catch::Matchers::Message("malformed control message: request 'big' has shape "
                               "[4294967296, 4294967296], more elements than an int64 can count"));
  CHECK_THROWS_WITH(decode_request_list(plain_request(DataType::kFloat32, {-3})),
                    Catch::Matchers::Contains("a negative dimension"));
}

TEST_CASE("negative counts in a response are refused") {
  for (int field = 0; field < 3; ++field) {
    Response r{.names = {"x"}};
    (field == 0 ? r.first_dims : field == 1 ? r.counts : r.parts) = {4, -1};
    ResponseList list;
    list.responses.push_back(r);
    CHECK_THROWS_WITH(decode_response_list(encode(list)), Catch::Matchers::Contains("include -1"));
  }
}

TEST_CASE("a list count whose byte size would overflow 64 bits is refused, not wrapped") {
  // 2^61 int64 are 2^64 bytes: a multiplied length would wrap to 0 and pass a bounds check.
  wire::Writer w;
  w.u64(uint64_t{1} << 61);
  auto bytes = bytes_of(w);
  CHECK_THAT(refusal<wire::MalformedBytes>([&] {
               wire::Reader rd(bytes);
               rd.i64s();
             }),
             Catch::Matchers::Contains("a list of 2305843009213693952 numbers") &&
                 Catch::Matchers::Contains("only 0 remain"));
}

TEST_CASE("decode refuses bytes that do not decode or are left over with the caller's error") {
  wire::Writer w;
  w.i32(7);
  w.u8(1);
  auto bytes = bytes_of(w);
  auto read_i32 = [](wire::Reader& rd) { return rd.i32(); };
  auto read_i64 = [](wire::Reader& rd) { return rd.i64(); };
  CHECK_THROWS_MATCHES(wire::decode<InvalidArgument>(bytes, "a test record", read_i32),
                       InvalidArgument,
                       Catch::Matchers::Message("a test record: 1 unexpected trailing bytes"));
  CHECK_THROWS_AS(wire::decode<InvalidArgument>(bytes, "a test record", read_i64), InvalidArgument);
  CHECK_THROWS_WITH(wire::decode<InvalidArgument>(bytes, "a test record", read_i64),
                    Catch::Matchers::StartsWith("a test record: truncated"));
  bytes.pop_back();
  CHECK(wire::decode<InvalidArgument>(bytes, "a test record", read_i32) == 7);
}
