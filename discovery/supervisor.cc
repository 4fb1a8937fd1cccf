#include "discovery/supervisor.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

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
  for (;;) {
    bool streams_open = false;
    std::vector<pollfd> fds{{signals_.get(), POLLIN, 0}};
    for (auto& s : streams_) {
      if (s.fd.valid()) {
        fds.push_back({s.fd.get(), POLLIN, 0});
        streams_open = true;
      }
    }
    if (all_exited() && !streams_open) return exit_code_;
    int timeout = -1;
    if (stopping_ && !all_exited()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          kill_deadline_ - std::chrono::steady_clock::now());
      timeout = static_cast<int>(std::max<long long>(left.count(), 0));
    }
    int rc = ::poll(fds.data(), fds.size(), timeout);
    if (rc < 0 && errno != EINTR) throw Error(std::string("poll: ") + std::strerror(errno));
    if (rc == 0 && stopping_) {
      log::warning("workers still running ", term_grace_.count() / 1000.0,
                   " s after SIGTERM; sending SIGKILL");
      stop_all(SIGKILL);
      kill_deadline_ = std::chrono::steady_clock::time_point::max();
      continue;
    }
    if (fds[0].revents & POLLIN) on_signal();
    size_t i = 1;
    for (auto& s : streams_) {
      if (!s.fd.valid()) continue;
      if (fds[i++].revents & (POLLIN | POLLHUP | POLLERR)) forward(s);
    }
  }
}

void Supervisor::on_signal() {
  signalfd_siginfo info;
  while (::read(signals_.get(), &info, sizeof info) == sizeof info) {
    int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) continue;  // reaped below
    log::error("received SIG", sigabbrev_np(sig), "; stopping the workers");
    if (exit_code_ == 0) exit_code_ = 128 + sig;
    if (!stopping_) {
      stopping_ = true;
      kill_deadline_ = std::chrono::steady_clock::now() + term_grace_;
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
  log::error(how, "; stopping the other workers");
  exit_code_ = 1;
  stopping_ = true;
  kill_deadline_ = std::chrono::steady_clock::now() + term_grace_;
  stop_all(SIGTERM);
}

void Supervisor::stop_all(int sig) {
  for (auto& w : workers_) {
    if (!w.status) ::kill(-w.info.pid, sig);  // the worker's whole process group
  }
}

void Supervisor::forward(Stream& s) {
  char buf[65536];
  ssize_t n = ::read(s.fd.get(), buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  std::string prefix = "[" + std::to_string(s.rank) + "] ";
  int out = s.is_stderr ? STDERR_FILENO : STDOUT_FILENO;
  if (n <= 0) {  // the worker closed its end: flush a last line without newline
    if (!s.partial.empty()) write_all(out, prefix + s.partial + "\n");
    s.partial.clear();
    s.fd.reset();
    return;
  }
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
