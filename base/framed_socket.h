// Length-prefixed frames over TCP, with a deadline on every step that blocks: what the runtime's
// control channel and the rendezvous client and server share. A frame is a 4-byte big-endian
// length followed by that many bytes.
//
// Sockets are non-blocking; the blocking calls here wait in poll() until their deadline, so a
// silent peer costs a timeout, never a hang. The control channel, which multiplexes its peers in
// one poll(), buffers frames itself with append_frame() and take_frames().
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/deadline.h"
#include "base/fd.h"
#include "cohort/errors.h"

namespace cohort {
class Cancellation;
}

namespace cohort::net {

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

inline constexpr size_t kFrameHeaderSize = 4;

// Connects to host:port (TCP_NODELAY, non-blocking), retrying refused connections (a listener
// that is not up yet) until `deadline`. Throws cohort::Error when it cannot, and InternalError
// with the reason once `cancel` fires.
Fd connect_tcp(const std::string& host, int port, SteadyClock::time_point deadline,
               const Cancellation* cancel = nullptr);
// Listens on `host` (port 0: an ephemeral one, written back to `port`) with room for `backlog`
// connections waiting to be accepted. The socket blocks in accept() unless set_nonblocking().
Fd listen_tcp(const std::string& host, int& port, int backlog = 512);
void set_nonblocking(int fd);
// Sends small frames at once instead of waiting to fill a packet (Nagle's algorithm off).
void set_nodelay(int fd);

// Waits until one of `fds` is ready or `deadline` (time_point::max(): none); false on timeout.
// Throws InternalError with the reason once `cancel` fires.
bool poll_until(std::vector<pollfd>& fds, SteadyClock::time_point deadline,
                const Cancellation* cancel = nullptr);
// One descriptor's poll_until.
bool wait_readable(int fd, SteadyClock::time_point deadline, const Cancellation* cancel = nullptr);
bool wait_writable(int fd, SteadyClock::time_point deadline, const Cancellation* cancel = nullptr);

// Throw cohort::Error on timeout or a broken connection.
void write_all(int fd, std::string_view bytes, SteadyClock::time_point deadline,
               const Cancellation* cancel = nullptr);
void write_frame(int fd, std::string_view payload, SteadyClock::time_point deadline,
                 const Cancellation* cancel = nullptr);
// Throws ConnectionClosed at a clean end, FrameError for broken framing or a frame over
// `max_size` (refused before anything is allocated for it), Error otherwise.
std::string read_frame(int fd, size_t max_size, SteadyClock::time_point deadline);
// Reads exactly `n` bytes. Throws ConnectionClosed when the peer closed before the first byte,
// FrameError when it closed or stalled midway, Error otherwise.
std::string read_bytes(int fd, size_t n, SteadyClock::time_point deadline);

// For callers that buffer frames themselves. The length of the frame whose header is at `header`
// (kFrameHeaderSize bytes).
uint32_t frame_length(const std::byte* header);
// Appends `payload` as a frame.
void append_frame(std::vector<std::byte>& out, std::span<const std::byte> payload);
// Removes the whole frames at the front of `received` and returns their payloads; a partial
// frame stays. Throws FrameError for a frame announced longer than `max_size`.
std::vector<std::vector<std::byte>> take_frames(std::vector<std::byte>& received, size_t max_size);

}  // namespace cohort::net
