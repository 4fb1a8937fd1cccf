#include "launcher/stop_interrupt.h"

#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "cohort/errors.h"
#include "launcher/job_signals.h"

namespace cohort::discovery {
namespace {

Fd checked(int fd, const char* what) {
  if (fd < 0) throw Error(std::string(what) + ": " + std::strerror(errno));
  return Fd(fd);
}

}  // namespace

StopInterrupt::StopInterrupt() {
  sigset_t stop = stop_signal_set();
  pending_ = checked(signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK), "signalfd");
  timer_ = checked(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK), "timerfd_create");
  epoll_ = checked(epoll_create1(EPOLL_CLOEXEC), "epoll_create1");
  for (int fd : {pending_.get(), timer_.get()}) {
    epoll_event event{.events = EPOLLIN, .data = {.fd = fd}};
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
      throw Error(std::string("epoll_ctl: ") + std::strerror(errno));
    }
  }
}

void StopInterrupt::stop_within(std::chrono::milliseconds budget) {
  // An it_value of 0 would disarm the timer: 1 ns is "now".
  auto ns = std::max<int64_t>(std::chrono::nanoseconds(budget).count(), 1);
  itimerspec when{.it_interval = {},
                  .it_value = {.tv_sec = static_cast<time_t>(ns / 1000000000),
                               .tv_nsec = static_cast<long>(ns % 1000000000)}};
  if (timerfd_settime(timer_.get(), 0, &when, nullptr) != 0) {
    throw Error(std::string("timerfd_settime: ") + std::strerror(errno));
  }
}

}  // namespace cohort::discovery
