// Blocking, deadline-bounded socket helpers for length-prefixed frames (rendezvous traffic).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/fd.h"

namespace cohort::discovery {

using Clock = std::chrono::steady_clock;

// Connects to host:port, retrying refused connections until `deadline`.
Fd connect_tcp(const std::string& host, int port, Clock::time_point deadline);
// Listens on host (port 0 = ephemeral); returns the socket and the port.
Fd listen_tcp(const std::string& host, int& port);

// Both throw cohort::Error naming `what` on timeout, a closed peer, or an oversized frame.
void write_frame(int fd, std::string_view payload, Clock::time_point deadline);
std::string read_frame(int fd, size_t max_size, Clock::time_point deadline);
// Waits until `fd` is readable or `deadline`; false on timeout.
bool wait_readable(int fd, Clock::time_point deadline);

}  // namespace cohort::discovery
