// The control lists' wire format 0xC2 (core/cache_wire.h, core/request.cc): hits and cached
// names as runs, element counts left out where the receiver's cache view knows them, and refusals
// that say what was wrong and which peer sent it.
#include <catch2/catch.hpp>

#include "base/wire.h"
#include "cohort/errors.h"
#include "core/cache_wire.h"
#include "core/coordination.h"
#include "core/request.h"
#include "core/response_cache.h"

using namespace cohort;

namespace {

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const InternalError& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

std::vector<std::byte> bytes_of(wire::Writer& w) {
  return w.bytes();
}

}  // namespace

TEST_CASE("hits travel as runs and come back in their order") {
  RequestList list{.hits = {2, 4, 6, 9, 11, 40, 20, 22}, .applied = 7};
  list.requests.push_back(Request{.name = "full", .shape = {3}});
  auto bytes = encode(list);
  RequestList back = decode_request_list(bytes);
  CHECK(back.hits == list.hits);
  CHECK(back.applied == 7);
  CHECK(back.requests == list.requests);

  RequestList empty;
  CHECK(encode(empty).size() == 5);  // format, shutdown, applied, no runs, no requests
  CHECK(decode_request_list(encode(empty)).hits.empty());
}

TEST_CASE("16k consecutive hits and cached names take a few bytes each way") {
  RequestList list;
  for (uint32_t id = 1; id <= 16384; ++id) list.hits.push_back(id << 1);
  auto bytes = encode(list);
  CHECK(bytes.size() < 16);
  CHECK(decode_request_list(bytes).hits == list.hits);

  Response r{.names = std::vector<std::string>(16384)};
  for (uint32_t id = 1; id <= 16384; ++id) r.cache_ids.push_back(id);
  r.counts.assign(16384, 10);  // the receiver's view knows them
  ResponseList responses{.responses = {r}};
  auto rbytes = encode(responses);
  CHECK(rbytes.size() < 48);
  ResponseList back = decode_response_list(rbytes);
  CHECK(back.responses.at(0).cache_ids == r.cache_ids);
  CHECK(back.responses.at(0).counts.empty());
}

TEST_CASE("names travel beside introduced and uncached ids, runs of known ids alone") {
  Response r{.names = {"new", "", "", "plain", ""},
             .cache_ids = {5 | 0x8000'0000u, 7, 8, 0, 3},
             .counts = {1, 2, 3, 4, 5}};
  auto back = decode_response_list(encode(ResponseList{.responses = {r}})).responses.at(0);
  CHECK(back.cache_ids == r.cache_ids);
  CHECK(back.names == std::vector<std::string>{"new", "", "", "plain", ""});
  CHECK(back.counts == r.counts);  // an introduced id: the counts travel
  CHECK(decode_response_list(encode(ResponseList{})).responses.empty());
}

TEST_CASE("malformed hits and names are refused with what was wrong") {
  wire::Writer zero;
  zero.u8(0xC2), zero.u8(0), zero.varint(0), zero.varint(1), zero.varint(1), zero.varint(3);
  zero.varint(0);
  CHECK_THAT(refusal([&] { decode_request_list(bytes_of(zero)); }),
             Catch::Matchers::Contains("a run of 3 cache hits from 1 names no valid ids"));

  wire::Writer past;  // a run of known names longer than the response's names
  past.u8(0xC2), past.u8(0), past.u64(0), past.varint(0), past.varint(1);
  past.u8(0), past.u8(0), past.varint(2), past.varint(9), past.varint(3);
  CHECK_THAT(refusal([&] { decode_response_list(bytes_of(past)); }),
             Catch::Matchers::Contains("a run of 3 cached names from id 9 does not fit the "
                                       "response's 2 names"));
}

TEST_CASE("one message names at most kMaxIdsPerMessage ids, however its runs are split") {
  const uint64_t half = kMaxIdsPerMessage / 2 + 1;
  wire::Writer names;  // two responses, each one run of `half` known ids: too many together
  names.u8(0xC2), names.u8(0), names.u64(0), names.varint(0), names.varint(2);
  names.u8(0), names.u8(0), names.varint(half), names.varint(1), names.varint(half);
  names.u8(0), names.i32(0), names.i32(0), names.u8(0), names.u8(0), names.i32(-1);
  names.u8(0), names.u8(0), names.varint(half), names.varint(1), names.varint(half);
  CHECK_THAT(refusal([&] { decode_response_list(bytes_of(names)); }),
             Catch::Matchers::Contains("a list of names of " + std::to_string(half) +
                                       " ids makes the message name more than 262144 ids"));

  wire::Writer hits;  // a run of every id the budget allows, then one more
  hits.u8(0xC2), hits.u8(0), hits.varint(0), hits.varint(2);
  hits.varint(2), hits.varint(kMaxIdsPerMessage), hits.varint(uint64_t{1} << 21), hits.varint(1);
  hits.varint(0);
  CHECK_THAT(refusal([&] { decode_request_list(bytes_of(hits)); }),
             Catch::Matchers::Contains("a run of cache hits of 1 ids makes the message name more "
                                       "than 262144 ids"));

  RequestList many;  // and an encoder never writes such a list
  for (uint32_t id = 1; id <= kMaxIdsPerMessage + 1; ++id) many.hits.push_back(id << 1);
  CHECK_THROWS_WITH(encode(many), Catch::Matchers::Contains("at most 262144 travel in one cycle"));
  many.hits.pop_back();
  CHECK(decode_request_list(encode(many)).hits.size() == kMaxIdsPerMessage);
}

TEST_CASE("a list in another format is refused, never misread, naming the peer") {
  // A build before format 0xC2 began a request list with its shutdown flag.
  wire::Writer old;
  old.u8(0), old.u64(0), old.u32s({2}), old.u32(0);
  auto bytes = bytes_of(old);
  CHECK_THAT(refusal([&] { decode_request_list(bytes); }),
             Catch::Matchers::Contains("format 0, but this build speaks 194"));
  CHECK_THAT(refusal([&] { decode_response_list(bytes); }),
             Catch::Matchers::Contains("format 0, but this build speaks 194"));

  Config config;
  Timeline timeline;
  Coordination coordination(config, 4, timeline);
  CHECK_THAT(refusal([&] {
               coordination.cycle({{3, bytes}}, {}, false);
             }),
             Catch::Matchers::StartsWith("rank 3 sent a malformed control message: format 0"));
}
