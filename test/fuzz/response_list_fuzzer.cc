// Response lists, which rank 0 sends every rank each cycle (core/request.h): the decoder must
// refuse corrupt bytes with InternalError, and what it accepts must survive a round trip.
#include "core/request.h"
#include "test/fuzz/fuzz_common.h"

using namespace cohort;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::decode_or_refuse([&] {
    ResponseList list = decode_response_list(fuzz::bytes(data, size));
    auto once = encode(list);
    fuzz::require(encode(decode_response_list(once)) == once);
  });
  return 0;
}
