// The first message on a control or heartbeat connection, before rank 0 knows who sent it: the
// sender's rank and the job's token. Its own file so that the bytes rank 0 reads from a connection
// it has not authenticated yet are decoded by one function that the fuzzer calls too
// (test/fuzz/control_message_fuzzer.cc).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace cohort {

struct ControlHello {
  int rank = 0;
  std::string token;
};

std::vector<std::byte> encode_control_hello(const ControlHello& hello);
// The hello's body (without the connection's length prefix). Throws InternalError for bytes that
// are not exactly a hello.
ControlHello parse_control_hello(std::span<const std::byte> body);

}  // namespace cohort
