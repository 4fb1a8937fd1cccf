// Request lists, which every rank sends rank 0 each cycle (core/request.h): the decoder must
// refuse corrupt bytes with InternalError, and what it accepts must encode to bytes that decode
// to the same list.
#include "core/request.h"
#include "test/fuzz/fuzz_common.h"

using namespace cohort;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::decode_or_refuse([&] {
    RequestList list = decode_request_list(fuzz::bytes(data, size));
    // The decoder normalises flags (any non-zero byte is true), so compare after one trip.
    auto once = encode(list);
    fuzz::require(encode(decode_request_list(once)) == once);
    for (const Request& r : list.requests) {
      for (size_t i = 0; i < num_tensors(r); ++i) fuzz::require(tensor_elements(r, i) >= 0);
    }
  });
  return 0;
}
