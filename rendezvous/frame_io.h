// Signed frames: how requests travel to the rendezvous server. The plain length-prefixed frames
// and the deadline-bounded socket calls under them are base/framed_socket.h's.
//
// A signed frame is a fixed-size header signed with the job secret, then the payload. The server
// checks the header before it allocates anything for the payload, so a peer without the secret
// can make it hold only kSignedHeaderSize bytes:
//   length (u32 BE) | timestamp_ms (i64 BE) | nonce (16 bytes) | HMAC-SHA256 of the 28 bytes before
// The timestamp and nonce let the server refuse a header replayed from a captured frame.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/deadline.h"
#include "base/framed_socket.h"

namespace cohort::rendezvous {

using Clock = SteadyClock;

inline constexpr size_t kSignedHeaderSize = 4 + 8 + 16 + 32;

struct SignedHeader {
  uint32_t length = 0;  // of the payload that follows
  int64_t timestamp_ms = 0;
  std::string nonce;
};

// Writes `payload` as a signed frame with header `timestamp_ms` (milliseconds since the Unix
// epoch) and `nonce` (16 fresh random bytes, which a refusal of the header repeats).
void write_signed_frame(int fd, std::string_view secret, std::string_view payload,
                        Clock::time_point deadline, int64_t timestamp_ms, std::string_view nonce);
// The header of a signed frame for `payload_size` bytes; for tests that build frames by hand.
std::string signed_header(std::string_view secret, uint32_t payload_size, int64_t timestamp_ms,
                          std::string_view nonce);
// Authenticates kSignedHeaderSize bytes. Throws net::FrameError for a wrong MAC or a length over
// `max_size`. Whether the timestamp and nonce are fresh is the caller's to judge.
SignedHeader open_signed_header(std::string_view secret, std::string_view header, size_t max_size);

}  // namespace cohort::rendezvous
