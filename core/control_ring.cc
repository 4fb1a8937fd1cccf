#include "core/control_ring.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "cohort/errors.h"

namespace cohort {

size_t ControlRing::footprint() {
  return sizeof(Header) + kCapacity;
}

ControlRing::ControlRing(std::byte* at, int peer)
    : header_(reinterpret_cast<Header*>(at)), data_(at + sizeof(Header)), peer_(peer) {}

uint64_t ControlRing::used() const {
  // seq_cst: the other side's counter is read after this side's sleep declaration (mark) or
  // counter store, never before it (the two sides' store-then-load must not be reordered).
  uint64_t used = header_->written.load() - header_->read.load();
  if (used > kCapacity) {
    throw InternalError("the control ring shared with rank " + std::to_string(peer_) +
                        " is corrupt (" + std::to_string(used) + " bytes in a ring of " +
                        std::to_string(kCapacity) + ")");
  }
  return used;
}

bool ControlRing::readable() const {
  return used() > 0;
}

bool ControlRing::writable() const {
  return used() < kCapacity;
}

size_t ControlRing::write(const std::byte* data, size_t bytes) {
  uint64_t written = header_->written.load(std::memory_order_relaxed);
  size_t n = std::min<uint64_t>(bytes, kCapacity - used());
  size_t at = written % kCapacity;
  size_t first = std::min(n, kCapacity - at);
  std::memcpy(data_ + at, data, first);
  std::memcpy(data_, data + first, n - first);
  header_->written.store(written + n);
  return n;
}

size_t ControlRing::read(std::byte* to, size_t max) {
  uint64_t read = header_->read.load(std::memory_order_relaxed);
  size_t n = std::min<uint64_t>(max, used());
  size_t at = read % kCapacity;
  size_t first = std::min(n, kCapacity - at);
  std::memcpy(to, data_ + at, first);
  std::memcpy(to + first, data_, n - first);
  header_->read.store(read + n);
  return n;
}

void ControlRing::mark(std::atomic<uint32_t>& flag) {
  flag.store(1);
}

bool ControlRing::take(std::atomic<uint32_t>& flag) {
  return flag.load() != 0 && flag.exchange(0) != 0;
}

}  // namespace cohort
