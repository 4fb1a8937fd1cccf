// The agent's StopInterrupt, with real signals: its descriptor is readable while a stop signal is
// pending, no longer once the job's loop read the signal, and from the end of stop_within's time
// on.
#include "launcher/stop_interrupt.h"

#include <poll.h>
#include <pthread.h>
#include <sys/signalfd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>

#include "launcher/job_signals.h"

using namespace cohort;
using namespace cohort::discovery;
using namespace std::chrono_literals;

namespace {

// Whether `fd` is readable within `wait`.
bool readable(int fd, std::chrono::milliseconds wait) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(wait.count())) == 1;
}

// The stop signals blocked in this thread for the scope, as block_job_signals() blocks them.
class Blocked {
 public:
  Blocked() {
    sigset_t stop = stop_signal_set();
    pthread_sigmask(SIG_BLOCK, &stop, &old_);
  }
  ~Blocked() {
    // Nothing of the test's own may stay pending once they are unblocked.
    sigset_t stop = stop_signal_set();
    Fd drain(signalfd(-1, &stop, SFD_NONBLOCK));
    signalfd_siginfo info;
    while (::read(drain.get(), &info, sizeof info) == sizeof info) {
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t old_;
};

}  // namespace

TEST_CASE("stop interrupt: readable while a stop signal is pending and until the loop reads it") {
  Blocked blocked;
  sigset_t stop = stop_signal_set();
  Fd job(signalfd(-1, &stop, SFD_NONBLOCK));  // the job loop's descriptor
  StopInterrupt interrupt;
  CHECK_FALSE(readable(interrupt.fd(), 0ms));
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    pthread_kill(pthread_self(), sig);  // this thread's: no other thread of the test may take it
    CHECK(readable(interrupt.fd(), 1000ms));
    signalfd_siginfo info;
    REQUIRE(::read(job.get(), &info, sizeof info) == sizeof info);
    CHECK(static_cast<int>(info.ssi_signo) == sig);
    CHECK_FALSE(readable(interrupt.fd(), 0ms));
  }
}

TEST_CASE("stop interrupt: readable from the end of stop_within's time on") {
  Blocked blocked;
  StopInterrupt interrupt;
  interrupt.stop_within(0ms);
  CHECK(readable(interrupt.fd(), 0ms));
  CHECK(readable(interrupt.fd(), 0ms));  // for good: nothing reads it
  auto start = std::chrono::steady_clock::now();
  interrupt.stop_within(200ms);  // set afresh
  CHECK_FALSE(readable(interrupt.fd(), 0ms));
  CHECK(readable(interrupt.fd(), 5000ms));
  CHECK(std::chrono::steady_clock::now() - start >= 190ms);
}
