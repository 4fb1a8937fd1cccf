// Blocking, deadline-bounded socket helpers for length-prefixed frames (rendezvous traffic).
// A frame is a 4-byte big-endian length followed by that many bytes.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "cohort/errors.h"
#include "core/fd.h"

namespace cohort::discovery {

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

}  // namespace cohort::discovery
