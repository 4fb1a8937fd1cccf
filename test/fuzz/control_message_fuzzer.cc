// The control channel's wire primitives (core/wire.h) as the pre-authentication hello uses them
// (an i32 rank, then a length-prefixed token, and nothing after: core/control_channel.cc), and in
// any other order a message may use them. The first input byte picks the layout; a length that
// the rest of the message cannot hold must be refused before anything is allocated, which
// -malloc_limit_mb catches.
//
// The hello's own parsing and the frame splitting are inside ControlChannel (accept_workers and
// read_some) with no function of their own; this harness covers the reader they call.
#include "core/wire.h"
#include "test/fuzz/fuzz_common.h"

using namespace cohort;

namespace {

void hello(wire::Reader& rd) {
  rd.i32();
  rd.str();
  rd.expect_done();
}

// Each remaining byte of `program` names the next read.
void program(wire::Reader& rd, std::span<const std::byte> ops) {
  for (std::byte op : ops) {
    switch (static_cast<uint8_t>(op) % 10) {
      case 0:
        rd.u8();
        break;
      case 1:
        rd.u32();
        break;
      case 2:
        rd.i32();
        break;
      case 3:
        rd.i64();
        break;
      case 4:
        rd.u64();
        break;
      case 5:
        rd.f64();
        break;
      case 6:
        rd.str();
        break;
      case 7:
        rd.i64s();
        break;
      case 8:
        rd.u32s();
        break;
      default:
        rd.expect_done();
        break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  auto in = fuzz::bytes(data, size);
  fuzz::decode_or_refuse([&] {
    if (data[0] < 128) {
      // The hello, as rank 0 reads it from a connection it has not authenticated yet.
      wire::Reader rd(in.subspan(1));
      hello(rd);
    } else {
      // (first byte & 15) read operations, then the message.
      size_t ops = std::min<size_t>(data[0] & 15, size - 1);
      wire::Reader rd(in.subspan(1 + ops));
      program(rd, in.subspan(1, ops));
    }
  });
  return 0;
}
