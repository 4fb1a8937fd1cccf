// An epoll set with its event buffer: what a thread that serves many connections sleeps in, so
// that a wake-up costs the descriptors that are ready, not every descriptor it watches (the
// control channel's star at rank 0, core/control_channel.h).
//
// The buffer holds one slot per registered descriptor, so one wait() returns everything that is
// ready. Tags are the caller's (an index, a token); the set never interprets them.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "base/fd.h"

namespace cohort {

class EpollSet {
 public:
  EpollSet() = default;  // no set: wait() only sleeps
  // Throws cohort::Error when the kernel refuses a set (out of descriptors).
  static EpollSet create();

  // Registers `fd` for `events` (EPOLLIN, EPOLLET, ...); its events come back with `tag`.
  // Throws cohort::Error when the kernel refuses.
  void add(int fd, uint32_t events, uint64_t tag);
  // Unregisters `fd` (before it is closed: a forked child holding a copy would keep it in the
  // set). Does nothing for a descriptor that is not registered.
  void remove(int fd);

  // Sleeps until a registered descriptor is ready or `timeout` passes (microsecond resolution);
  // returns the ready events, valid until the next call (empty on timeout or a signal). Throws
  // cohort::Error when the kernel refuses.
  std::span<const epoll_event> wait(std::chrono::microseconds timeout);

 private:
  Fd fd_;
  std::vector<epoll_event> events_;  // one slot per registered descriptor, at least one
  size_t registered_ = 0;
};

}  // namespace cohort
