#include "core/control_hello.h"

#include "base/wire.h"
#include "cohort/errors.h"

namespace cohort {

std::vector<std::byte> encode_control_hello(const ControlHello& hello) {
  wire::Writer w;
  w.i32(hello.rank);
  w.str(hello.token);
  return w.bytes();
}

ControlHello parse_control_hello(std::span<const std::byte> body) {
  return wire::decode<InternalError>(body, "malformed control message", [](wire::Reader& rd) {
    ControlHello hello;
    hello.rank = rd.i32();
    hello.token = rd.str();
    return hello;
  });
}

}  // namespace cohort
