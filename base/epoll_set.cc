#include "base/epoll_set.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "cohort/errors.h"

namespace cohort {
namespace {

timespec to_timespec(std::chrono::microseconds timeout) {
  auto us = std::max<int64_t>(timeout.count(), 0);
  return {static_cast<time_t>(us / 1'000'000), static_cast<long>(us % 1'000'000) * 1000};
}

}  // namespace

EpollSet EpollSet::create() {
  EpollSet set;
  set.fd_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!set.fd_.valid()) throw Error(std::string("epoll_create1 failed: ") + std::strerror(errno));
  set.events_.resize(1);
  return set;
}

void EpollSet::add(int fd, uint32_t events, uint64_t tag) {
  epoll_event e{.events = events, .data = {.u64 = tag}};
  if (::epoll_ctl(fd_.get(), EPOLL_CTL_ADD, fd, &e) != 0) {
    throw Error(std::string("epoll_ctl(ADD) failed: ") + std::strerror(errno));
  }
  ++registered_;
  if (events_.size() < registered_) events_.resize(registered_);
}

void EpollSet::remove(int fd) {
  if (fd < 0 || !fd_.valid()) return;
  if (::epoll_ctl(fd_.get(), EPOLL_CTL_DEL, fd, nullptr) == 0) --registered_;
}

std::span<const epoll_event> EpollSet::wait(std::chrono::microseconds timeout) {
  timespec ts = to_timespec(timeout);
  if (!fd_.valid()) {
    ::ppoll(nullptr, 0, &ts, nullptr);
    return {};
  }
  int max = static_cast<int>(events_.size());
  // epoll_wait's resolution is a millisecond, and the control channel's batching windows are
  // shorter; epoll_pwait2 (Linux 5.11) takes nanoseconds.
  int n = ::epoll_pwait2(fd_.get(), events_.data(), max, &ts, nullptr);
  if (n < 0 && errno == ENOSYS) {
    // An older kernel: the set is itself a descriptor that polls readable while one is ready.
    pollfd set{fd_.get(), POLLIN, 0};
    n = ::ppoll(&set, 1, &ts, nullptr);
    if (n > 0) n = ::epoll_wait(fd_.get(), events_.data(), max, 0);
  }
  if (n < 0 && errno == EINTR) return {};
  if (n < 0) throw Error(std::string("epoll_wait failed: ") + std::strerror(errno));
  return {events_.data(), static_cast<size_t>(n)};
}

}  // namespace cohort
