// Blocking, deadline-bounded socket helpers for length-prefixed frames (rendezvous traffic).
// A frame is a 4-byte big-endian length followed by that many bytes.
//
// Requests to the rendezvous server travel as signed frames instead: a fixed-size header signed
// with the job secret, then the payload. The server checks the header before it allocates anything
// for the payload, so a peer without the secret can make it hold only kSignedHeaderSize bytes:
//   length (u32 BE) | timestamp_ms (i64 BE) | nonce (16 bytes) | HMAC-SHA256 of the 28 bytes before
// The timestamp and nonce let the server refuse a header replayed from a captured frame.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/fd.h"
#include "cohort/errors.h"

namespace cohort::rendezvous {

using Clock = std::chrono::steady_clock;

// The peer broke the framing: an oversized length, or a frame cut short or stalled midway.
class FrameError : public Error {
 public:
  using Error::Error;
};

// The peer closed the connection cleanly, between two frames.
class ConnectionClosed : public Error {
 public:
  using Error::Error;
};

// Connects to host:port, retrying refused connections until `deadline`.
Fd connect_tcp(const std::string& host, int port, Clock::time_point deadline);
// Listens on host (port 0 = ephemeral); returns the socket and the port.
Fd listen_tcp(const std::string& host, int& port);

// Throws cohort::Error on timeout or a broken connection.
void write_frame(int fd, std::string_view payload, Clock::time_point deadline);
// Throws ConnectionClosed at a clean end, FrameError for broken framing, Error otherwise.
std::string read_frame(int fd, size_t max_size, Clock::time_point deadline);
// Waits until `fd` is readable or `deadline`; false on timeout.
bool wait_readable(int fd, Clock::time_point deadline);

inline constexpr size_t kSignedHeaderSize = 4 + 8 + 16 + 32;

struct SignedHeader {
  uint32_t length = 0;  // of the payload that follows
  int64_t timestamp_ms = 0;
  std::string nonce;
};

// Writes `payload` as a signed frame (a fresh nonce, the current time).
void write_signed_frame(int fd, std::string_view secret, std::string_view payload,
                        Clock::time_point deadline);
// The header of a signed frame for `payload_size` bytes; for tests that build frames by hand.
std::string signed_header(std::string_view secret, uint32_t payload_size, int64_t timestamp_ms,
                          std::string_view nonce);
// Authenticates kSignedHeaderSize bytes. Throws FrameError for a wrong MAC or a length over
// `max_size`. Whether the timestamp and nonce are fresh is the caller's to judge.
SignedHeader open_signed_header(std::string_view secret, std::string_view header, size_t max_size);
// Reads exactly `n` bytes. Throws ConnectionClosed when the peer closed before the first byte,
// FrameError when it closed or stalled midway, Error otherwise.
std::string read_bytes(int fd, size_t n, Clock::time_point deadline);

}  // namespace cohort::rendezvous
