// The control channel's shared-memory transport for ranks of one host (ControlChannel::use_rings
// in core/control_channel.h); the sockets' side is in core/control_channel.cc.
#include <sys/socket.h>

#include <algorithm>

#include "base/cpu_relax.h"
#include "base/deadline.h"
#include "cohort/errors.h"
#include "core/control_channel.h"

namespace cohort {
namespace {

// Rank r > 0 owns the (r - 1)th pair: first the ring towards rank 0, then the one from it.
std::byte* ring_at(ops::ShmSegment& segment, int rank, bool towards_zero) {
  size_t index = 2 * static_cast<size_t>(rank - 1) + (towards_zero ? 0 : 1);
  return segment.data() + index * ControlRing::footprint();
}

}  // namespace

size_t ControlChannel::rings_bytes(int size) {
  return 2 * static_cast<size_t>(std::max(size - 1, 0)) * ControlRing::footprint();
}

void ControlChannel::use_rings(ops::ShmSegment segment, std::chrono::microseconds spin) {
  if (segment.size() < rings_bytes(size_)) {
    throw InternalError("the " + label_ + " segment is too small for " + std::to_string(size_) +
                        " ranks");
  }
  ring_peers_.clear();
  for (size_t index = 0; index < peers_.size(); ++index) {
    Peer& p = peers_[index];
    if (p.rank < 0 || p.rank == rank_) continue;
    int worker = rank_ == 0 ? p.rank : rank_;
    ControlRing up(ring_at(segment, worker, true), p.rank);
    ControlRing down(ring_at(segment, worker, false), p.rank);
    p.rings = rank_ == 0 ? Rings{up, down} : Rings{down, up};
    ring_peers_.push_back(index);
  }
  rings_segment_ = std::move(segment);
  spin_ = spin;
}

void ControlChannel::ring_doorbell(Peer& p) {
  // One byte wakes the peer's poll. A full socket holds doorbells enough; a broken one is
  // reported by the poll that watches it.
  char bell = 0;
  [[maybe_unused]] ssize_t n = ::send(p.fd.get(), &bell, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void ControlChannel::write_ring(Peer& p) {
  ControlRing& ring = p.rings->out;
  while (!p.out.empty()) {
    size_t n = ring.write(p.out.data(), p.out.size());
    p.out.erase(p.out.begin(), p.out.begin() + n);
    if (n > 0 && ring.take_sleeping_reader()) ring_doorbell(p);
    if (n > 0) continue;
    ring.writer_sleeps();  // full: the reader rings once it has made room
    if (!ring.writable()) return;
    ring.writer_awake();
  }
}

void ControlChannel::read_ring(Peer& p) {
  ControlRing& ring = p.rings->in;
  std::byte buf[16 * 1024];
  bool took = false;
  while (size_t n = ring.read(buf, sizeof buf)) {
    p.in.insert(p.in.end(), buf, buf + n);
    took = true;
  }
  if (took && ring.take_sleeping_writer()) ring_doorbell(p);
}

bool ControlChannel::spin_for_rings(std::chrono::microseconds limit) {
  if (limit.count() <= 0 || !rings_segment_ || !spin_policy_.should_spin()) return false;
  auto deadline = SteadyClock::now() + limit;
  for (int turn = 1;; ++turn) {
    if (rings_ready()) {
      spin_policy_.spun(true);
      return true;
    }
    if (turn % 64 == 0 && SteadyClock::now() >= deadline) {
      spin_policy_.spun(false);
      return false;
    }
    cpu_relax();
  }
}

bool ControlChannel::rings_ready() {
  if (woken_->exchange(false, std::memory_order_relaxed)) return true;
  for (size_t index : ring_peers_) {
    Peer& p = peers_[index];
    if (!p.rings || !p.fd.valid()) continue;
    if (p.rings->in.readable()) return true;
    if (!p.out.empty() && p.rings->out.writable()) return true;
  }
  return false;
}

bool ControlChannel::rings_sleep() {
  bool ready = false;
  for (size_t index : ring_peers_) {
    Peer& p = peers_[index];
    if (!p.rings || !p.fd.valid()) continue;
    p.rings->in.reader_sleeps();
    ready = ready || p.rings->in.readable();
    if (!p.out.empty()) {
      p.rings->out.writer_sleeps();
      ready = ready || p.rings->out.writable();
    }
  }
  return !ready;
}

void ControlChannel::rings_awake() {
  for (size_t index : ring_peers_) {
    Peer& p = peers_[index];
    if (!p.rings) continue;
    p.rings->in.reader_awake();
    p.rings->out.writer_awake();
  }
}

}  // namespace cohort
