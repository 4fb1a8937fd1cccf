// An eventfd that other threads signal to wake the launcher's poll() loop: the rendezvous server
// when a worker checks in, an agent's etcd watch when the job changed.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "base/fd.h"
#include "cohort/errors.h"

namespace cohort::discovery {

class Wakeup {
 public:
  Wakeup() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (!fd_.valid()) throw Error(std::string("eventfd: ") + std::strerror(errno));
  }
  int fd() const { return fd_.get(); }
  // Safe from any thread.
  void signal() const {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(fd_.get(), &one, sizeof one);
  }
  // Takes back every signal so far; poll() then sleeps until the next.
  void drain() const {
    uint64_t count;
    while (::read(fd_.get(), &count, sizeof count) == sizeof count) {
    }
  }

 private:
  Fd fd_;
};

}  // namespace cohort::discovery
