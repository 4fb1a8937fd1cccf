#include "discovery/supervisor.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "cohort/errors.h"
#include "core/log.h"

namespace cohort::discovery {
namespace {

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // our own output is gone; nothing better to do
    done += static_cast<size_t>(n);
  }
}

// What the user must see whatever the log level, in the same form as cohortrun's other errors.
void report(const std::string& message) {
  write_all(STDERR_FILENO, "cohortrun: " + message + "\n");
}

}  // namespace

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) +
           (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "ended with wait status " + std::to_string(status);
}

Fd block_job_signals() {
  // A closed stdout (cohortrun | head) must not kill cohortrun and orphan the workers; the
  // workers get the default disposition back when they are spawned.
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM}) sigaddset(&set, sig);
  if (pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) throw Error("cannot block job signals");
  Fd fd(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd.valid()) throw Error(std::string("signalfd: ") + std::strerror(errno));
  return fd;
}

Supervisor::Supervisor(Fd signals, std::chrono::milliseconds term_grace)
    : signals_(std::move(signals)), term_grace_(term_grace) {}

void Supervisor::add(LaunchedWorker worker) {
  streams_.push_back({worker.rank, std::move(worker.out), false, {}});
  streams_.push_back({worker.rank, std::move(worker.err), true, {}});
  workers_.push_back({std::move(worker), std::nullopt});
}

bool Supervisor::all_exited() const {
  for (const auto& w : workers_) {
    if (!w.status) return false;
  }
  return true;
}

int Supervisor::run() {
  reap();  // a worker may have exited before we started watching
  while (!all_exited() || open_streams() > 0) {
    std::vector<size_t> which;  // fds[i + 1] belongs to streams_[which[i]]
    std::vector<pollfd> fds{{signals_.get(), POLLIN, 0}};
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (!streams_[i].fd.valid()) continue;
      fds.push_back({streams_[i].fd.get(), POLLIN, 0});
      which.push_back(i);
    }
    int rc = ::poll(fds.data(), fds.size(), poll_timeout());
    if (rc < 0 && errno != EINTR) throw Error(std::string("poll: ") + std::strerror(errno));
    if (rc == 0) on_deadline();
    if (rc <= 0) continue;
    if (fds[0].revents & POLLIN) on_signal();
    for (size_t i = 0; i < which.size(); ++i) {
      if (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) forward(streams_[which[i]]);
    }
  }
  return exit_code_;
}

size_t Supervisor::open_streams() const {
  return static_cast<size_t>(std::count_if(streams_.begin(), streams_.end(),
                                           [](const Stream& s) { return s.fd.valid(); }));
}

int Supervisor::poll_timeout() const {
  std::optional<Clock::time_point> deadline;
  if (all_exited()) {
    deadline = drain_deadline_;
  } else if (stopping_ && !killed_) {
    deadline = kill_deadline_;
  }
  if (!deadline) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

void Supervisor::on_deadline() {
  if (!all_exited()) {
    report("workers still running " + std::to_string(term_grace_.count()) +
           " ms after being asked to stop; sending SIGKILL");
    stop_all(SIGKILL);
    killed_ = true;
    return;
  }
  // Every worker is gone but something it started still holds its output open: stop waiting.
  for (auto& s : streams_) {
    if (!s.fd.valid()) continue;
    log::warning("rank ", s.rank,
                 " exited but its output is still open (a child it left "
                 "running?); no longer forwarding it");
    flush_partial(s);
    s.fd.reset();
  }
}

void Supervisor::on_signal() {
  signalfd_siginfo info;
  while (::read(signals_.get(), &info, sizeof info) == sizeof info) {
    int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) continue;  // reaped below
    report(std::string("received SIG") + sigabbrev_np(sig) + "; stopping the workers");
    if (exit_code_ == 0) exit_code_ = 128 + sig;
    if (!stopping_) {
      stopping_ = true;
      kill_deadline_ = Clock::now() + term_grace_;
    }
    stop_all(sig);
  }
  reap();
}

void Supervisor::reap() {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    for (auto& w : workers_) {
      if (w.info.pid == pid) on_exit(w, status);
    }
  }
  if (all_exited() && !drain_deadline_) drain_deadline_ = Clock::now() + kDrainTime;
}

void Supervisor::on_exit(Worker& worker, int status) {
  worker.status = status;
  bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (!failed) return;
  std::string how = "rank " + std::to_string(worker.info.rank) + " (pid " +
                    std::to_string(worker.info.pid) + " on " + worker.info.host + ") " +
                    describe_exit(status);
  if (stopping_) {
    log::info(how);
    return;
  }
  report(how + "; stopping the other workers");
  exit_code_ = 1;
  stopping_ = true;
  kill_deadline_ = Clock::now() + term_grace_;
  stop_all(SIGTERM);
}

void Supervisor::abort(const std::string& why) {
  report(why + (workers_.empty() ? "" : "; stopping the workers already started"));
  exit_code_ = 2;
  if (stopping_) return;
  stopping_ = true;
  kill_deadline_ = Clock::now() + term_grace_;
  stop_all(SIGTERM);
}

void Supervisor::stop_all(int sig) {
  for (auto& w : workers_) {
    if (!w.status) ::kill(-w.info.pid, sig);  // the worker's whole process group
  }
}

void Supervisor::flush_partial(Stream& s) {
  if (s.partial.empty()) return;
  write_all(s.is_stderr ? STDERR_FILENO : STDOUT_FILENO,
            "[" + std::to_string(s.rank) + "] " + s.partial + "\n");
  s.partial.clear();
}

void Supervisor::forward(Stream& s) {
  char buf[65536];
  ssize_t n = ::read(s.fd.get(), buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {  // the worker closed its end: flush a last line without newline
    flush_partial(s);
    s.fd.reset();
    return;
  }
  std::string prefix = "[" + std::to_string(s.rank) + "] ";
  int out = s.is_stderr ? STDERR_FILENO : STDOUT_FILENO;
  s.partial.append(buf, static_cast<size_t>(n));
  std::string lines;
  size_t start = 0, nl;
  while ((nl = s.partial.find('\n', start)) != std::string::npos) {
    lines += prefix;
    lines.append(s.partial, start, nl - start + 1);
    start = nl + 1;
  }
  s.partial.erase(0, start);
  if (!lines.empty()) write_all(out, lines);
}

}  // namespace cohort::discovery
