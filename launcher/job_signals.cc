#include "launcher/job_signals.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "cohort/errors.h"
#include "launcher/job_report.h"

namespace cohort::discovery {

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  return set;
}

Fd block_job_signals() {
  // A closed stdout (cohortrun | head) must not kill cohortrun and orphan the workers; the
  // workers get the default disposition back when they are spawned.
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t set = stop_signal_set();
  for (int sig : {SIGCHLD, SIGUSR1, SIGUSR2}) sigaddset(&set, sig);
  if (pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) throw Error("cannot block job signals");
  Fd fd(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd.valid()) throw Error(std::string("signalfd: ") + std::strerror(errno));
  return fd;
}

std::vector<int> read_job_signals(int signal_fd, WorkerGroup& workers) {
  std::vector<int> signals;
  signalfd_siginfo info;
  while (::read(signal_fd, &info, sizeof info) == sizeof info) {
    int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGUSR1 || sig == SIGUSR2) {
      announce(std::string("received SIG") + sigabbrev_np(sig) + "; passing it on to the workers");
      workers.pass_on(sig);
    } else if (sig != SIGCHLD) {
      signals.push_back(sig);
    }
  }
  return signals;
}

}  // namespace cohort::discovery
