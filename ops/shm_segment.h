// A shared-memory segment for the ranks of one host. Local rank 0 creates it as an anonymous
// memfd and hands the descriptor to the others over a Unix socket in the abstract namespace, so
// that nothing is left in /dev/shm or on disk when the processes end, however they end: the
// memory goes with the last mapping, the socket name with its listener.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <string>

#include "base/cancellation.h"
#include "base/deadline.h"

namespace cohort::ops {

// What the local ranks must share before they meet, sent to them by another channel (the world
// backend's broadcast): where to meet, and the token that proves a connection is one of them.
// The name can be listed by anyone on the host (/proc/net/unix); the token is never in a name.
struct ShmRendezvous {
  std::array<unsigned char, 16> name{};
  std::array<unsigned char, 32> token{};

  // Fresh random bytes for both.
  static ShmRendezvous random();
};

class ShmSegment {
 public:
  // Local rank 0: creates a segment of `bytes` (zero-filled), waits until every other local rank
  // (1 .. local_size - 1, each once) has connected with the token and taken the descriptor. A
  // connection from another user or with a wrong token is refused and logged. Throws
  // InternalError naming the local ranks that did not connect by `deadline` or when `cancel`
  // fires. `label` names the memory in /proc/PID/maps ("memfd:LABEL (deleted)").
  static ShmSegment create(const ShmRendezvous& meet, int local_size, size_t bytes,
                           SteadyClock::time_point deadline, const Cancellation* cancel,
                           const char* label = "cohort-shm");
  // Another local rank: connects to local rank 0 (retrying until it listens), presents the token
  // and maps what it receives. Throws InternalError on the deadline or cancellation.
  static ShmSegment open(const ShmRendezvous& meet, int local_rank,
                         SteadyClock::time_point deadline, const Cancellation* cancel);

  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  ShmSegment(std::byte* data, size_t size) : data_(data), size_(size) {}

  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace cohort::ops
