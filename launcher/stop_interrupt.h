// What ends a job's requests to etcd once a signal stops the job (EtcdOptions::interrupt_fd): one
// descriptor, readable while SIGINT, SIGTERM or SIGHUP is pending (from its arrival until the
// job's loop reads it from block_job_signals' descriptor), and from the end of the time the job
// gives etcd as it stops (stop_within) on. So a request to an etcd that does not answer never
// holds up a signal, and what the job still tells etcd as it stops (that its node leaves, that its
// workers exit, that its lease may go) never holds up its exit for longer than that time.
#pragma once

#include <chrono>

#include "base/fd.h"

namespace cohort::discovery {

class StopInterrupt {
 public:
  // Needs the stop signals blocked (block_job_signals) in every thread that makes requests.
  StopInterrupt();
  StopInterrupt(const StopInterrupt&) = delete;
  StopInterrupt& operator=(const StopInterrupt&) = delete;

  int fd() const { return epoll_.get(); }
  // fd() is readable `budget` from now on (0: now), besides while a stop signal is pending; a
  // later call sets the time afresh.
  void stop_within(std::chrono::milliseconds budget);

 private:
  Fd pending_;  // a signalfd of the stop signals that is never read: readable while one is pending
  Fd timer_;    // a timerfd, never read: readable once stop_within's time is over
  Fd epoll_;    // both
};

}  // namespace cohort::discovery
