// For the rendezvous server's tests: requests sent on raw sockets, many at once from one thread,
// and room for the descriptors that takes.
#pragma once

#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "base/framed_socket.h"
#include "rendezvous/frame_io.h"
#include "rendezvous/hmac.h"
#include "rendezvous/protocol.h"

namespace cohort::rendezvous::testing {

// Lets this process hold `n` more descriptors (a flood of connections, both ends here).
inline void allow_descriptors(rlim_t n) {
  rlimit limit{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &limit) == 0);
  if (limit.rlim_cur < n) {
    limit.rlim_cur = std::min(n, limit.rlim_max);
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &limit) == 0);
  }
  REQUIRE(limit.rlim_cur >= n);
}

// A request as a client makes it: fresh nonce and time.
inline RendezvousRequest raw_request(RendezvousOp op, const std::string& key,
                                     const std::string& value = "", int64_t timeout_ms = 0) {
  return {.op = op,
          .nonce = random_bytes(kNonceSize),
          .timestamp_ms = unix_millis(),
          .key = key,
          .value = value,
          .timeout_ms = timeout_ms};
}

// Sends `request` on `fd` as a signed frame, the whole frame in one write.
inline void send_request(int fd, const std::string& secret, const RendezvousRequest& request) {
  write_signed_frame(fd, secret, seal_request(secret, request),
                     SteadyClock::now() + std::chrono::seconds(5), request.timestamp_ms,
                     random_bytes(kNonceSize));
}

// The server's answer on `fd`, authenticated.
inline RendezvousResponse read_response(int fd, const std::string& secret,
                                        std::chrono::milliseconds within) {
  return open_response(secret,
                       net::read_frame(fd, kMaxRendezvousFrame, SteadyClock::now() + within));
}

}  // namespace cohort::rendezvous::testing
