// A one-way byte stream through shared memory, from one process's background thread to
// another's: the control channel's transport between ranks of one host (core/control_channel.h),
// where a message then costs two copies instead of a trip through the TCP stack.
//
// The ring only moves bytes; the control channel frames them, as it does a socket's. Each side
// says when it is about to sleep (the reader, on an empty ring; the writer, on a full one), so that
// the other can ring its doorbell, a byte on their TCP connection, only then.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cohort {

class ControlRing {
 public:
  // Bytes of shared memory one ring occupies (zero-filled is an empty ring).
  static size_t footprint();

  // A view on a ring at `at` (footprint() bytes, 64-byte aligned), shared with the other side.
  // `peer` names the other rank in errors.
  ControlRing(std::byte* at, int peer);

  // Writer: copies as much of `data` as there is room for; returns how much.
  size_t write(const std::byte* data, size_t bytes);
  // Reader: copies at most `max` bytes out; returns how many.
  size_t read(std::byte* to, size_t max);
  bool readable() const;
  bool writable() const;

  // Before sleeping: the side declares it, and must then look at the ring once more (readable(),
  // writable()), since the other side may have acted just before seeing the declaration.
  void reader_sleeps() { mark(header_->reader_sleeping); }
  void writer_sleeps() { mark(header_->writer_sleeping); }
  // After acting: whether the other side declared it sleeps (the flag is cleared): if so, it needs
  // its doorbell rung.
  bool take_sleeping_reader() { return take(header_->reader_sleeping); }
  bool take_sleeping_writer() { return take(header_->writer_sleeping); }
  // Once awake, so that the other side does not ring in vain.
  void reader_awake() { header_->reader_sleeping.store(0, std::memory_order_relaxed); }
  void writer_awake() { header_->writer_sleeping.store(0, std::memory_order_relaxed); }

 private:
  struct Header {
    alignas(64) std::atomic<uint64_t> written;  // total bytes ever written; only the writer stores
    alignas(64) std::atomic<uint64_t> read;     // total bytes ever read; only the reader stores
    alignas(64) std::atomic<uint32_t> reader_sleeping;
    alignas(64) std::atomic<uint32_t> writer_sleeping;
  };
  static constexpr size_t kCapacity = size_t{256} << 10;

  // Bytes in the ring; throws InternalError if the counters are impossible (a corrupt peer).
  uint64_t used() const;
  static void mark(std::atomic<uint32_t>& flag);
  static bool take(std::atomic<uint32_t>& flag);

  Header* header_;
  std::byte* data_;
  int peer_;
};

}  // namespace cohort
