// The control channel's pre-authentication hello, decoded by the function rank 0 calls on bytes
// from a connection it has not authenticated yet (parse_control_hello, core/control_hello.h), and
// the wire primitives (base/wire.h) in any other order a control message may use them. The first
// input byte picks which; a length that the rest of the message cannot hold must be refused
// before anything is allocated, which -malloc_limit_mb catches. A hello that decodes must come
// back the same through encode_control_hello.
#include <algorithm>
#include <cstdlib>

#include "base/wire.h"
#include "core/control_hello.h"
#include "test/fuzz/fuzz_common.h"

using namespace cohort;

namespace {

void hello(std::span<const std::byte> body) {
  ControlHello decoded = parse_control_hello(body);
  auto again = encode_control_hello(decoded);
  if (!std::equal(again.begin(), again.end(), body.begin(), body.end())) std::abort();
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
      hello(in.subspan(1));
    } else {
      // (first byte & 15) read operations, then the message.
      size_t ops = std::min<size_t>(data[0] & 15, size - 1);
      wire::Reader rd(in.subspan(1 + ops));
      program(rd, in.subspan(1, ops));
    }
  });
  return 0;
}
