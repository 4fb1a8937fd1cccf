#include "discovery/script_run.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "cohort/errors.h"
#include "launcher/job_report.h"
#include "launcher/spawn.h"

namespace cohort::discovery {
namespace {

// A fast writer must not keep advance() reading forever: after this many reads per stream it
// returns, and poll() reports the rest at once.
constexpr int kReadsPerAdvance = 16;

std::pair<Fd, Fd> make_pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
  // Only our end is non-blocking; the program writes to an ordinary blocking pipe.
  if (fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(std::string("fcntl: ") + std::strerror(errno));
  }
  return {Fd(fds[0]), Fd(fds[1])};
}

// Like a worker (spawn_in_own_group), but with stdin from /dev/null and argv[0] taken as a path.
pid_t spawn(const std::vector<std::string>& argv, int out, int err) {
  Spawned spawned =
      spawn_in_own_group(argv, nullptr, {.out_fd = out, .err_fd = err, .stdin_from_dev_null = true},
                         /*search_path=*/false);
  if (spawned.error != 0) {
    throw Error("cannot run '" + argv[0] + "': " + std::strerror(spawned.error));
  }
  return spawned.pid;
}

std::string escaped(std::string_view bytes) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace

std::string excerpt(const std::string& text, size_t limit, bool keep_tail) {
  if (text.size() <= limit) return escaped(text);
  std::string omitted = "[... " + std::to_string(text.size() - limit) + " bytes left out ...]";
  if (keep_tail) return omitted + escaped(std::string_view(text).substr(text.size() - limit));
  return escaped(std::string_view(text).substr(0, limit)) + omitted;
}

bool ScriptResult::ok() const {
  return problem().empty();
}

std::string ScriptResult::problem() const {
  if (!start_error.empty()) return "could not be started: " + start_error;
  if (!wait_error.empty()) return "ended, but its exit status is unknown: " + wait_error;
  if (timed_out) {
    return "did not finish within its " + std::to_string(timeout.count()) +
           " ms timeout and was killed with its process group";
  }
  if (stdout_overflow) return "printed too much on stdout and was killed with its process group";
  if (output_left_open) {
    return "exited, but its stdout stayed open until the timeout (a process it started outside "
           "its process group holds it)";
  }
  if (wait_status && *wait_status != 0) return describe_exit(*wait_status);
  return "";
}

std::string ScriptResult::report(const std::string& headline) const {
  constexpr size_t kShown = 2048;
  std::string text = headline;
  text += "\n  stdout: " + (out.empty() ? "(empty)" : excerpt(out, kShown, false));
  text += "\n  stderr: " + (err.empty() ? "(empty)" : excerpt(err, kShown, true));
  if (err_dropped > 0)
    text += "\n  (" + std::to_string(err_dropped) + " more stderr bytes dropped)";
  return text;
}

ScriptRun::ScriptRun(const std::vector<std::string>& argv, ScriptLimits limits) : limits_(limits) {
  if (argv.empty() || argv[0].empty()) throw InvalidArgument("no program to run");
  auto [out_read, out_write] = make_pipe();
  auto [err_read, err_write] = make_pipe();
  result_.timeout = limits_.timeout;
  started_ = SteadyClock::now();
  deadline_ = started_ + limits_.timeout;
  pid_ = spawn(argv, out_write.get(), err_write.get());
  out_ = std::move(out_read);
  err_ = std::move(err_read);
  // Through syscall(): glibc 2.36 declares pidfd_open without C linkage for C++.
  pidfd_ = Fd(static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)));
  if (!pidfd_.valid()) {
    int error = errno;
    kill_group_and_reap();
    throw Error(std::string("pidfd_open (needs Linux 5.3 or later): ") + std::strerror(error));
  }
}

ScriptRun::~ScriptRun() {
  if (!exited_) kill_group_and_reap();
}

std::vector<pollfd> ScriptRun::poll_fds() const {
  std::vector<pollfd> fds;
  for (const Fd* fd : {&out_, &err_, &pidfd_}) {
    if (fd->valid()) fds.push_back({fd->get(), POLLIN, 0});
  }
  return fds;
}

void ScriptRun::advance() {
  if (done_) return;
  read_ready(out_, true);
  if (done_) return;
  read_ready(err_, false);
  check_exit();
  if (exited_ && !out_.valid() && !err_.valid()) return finish();
  if (SteadyClock::now() < deadline_) return;
  if (exited_) {
    result_.output_left_open = true;
  } else {
    result_.timed_out = true;
    kill_group_and_reap();
    // Keep what it wrote before it died, for the report.
    read_ready(out_, true);
    read_ready(err_, false);
  }
  finish();
}

void ScriptRun::read_ready(Fd& fd, bool is_stdout) {
  char buf[65536];
  for (int i = 0; i < kReadsPerAdvance && fd.valid() && !done_; ++i) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {  // end of output (or an error reading it: nothing more will come)
      fd.reset();
      return;
    }
    auto size = static_cast<size_t>(n);
    std::string& into = is_stdout ? result_.out : result_.err;
    size_t limit = is_stdout ? limits_.max_stdout : limits_.max_stderr;
    size_t room = limit - std::min(limit, into.size());
    into.append(buf, std::min(room, size));
    if (size <= room) continue;
    if (!is_stdout) {
      result_.err_dropped += size - room;
      continue;
    }
    result_.stdout_overflow = true;
    kill_group_and_reap();
    finish();
  }
}

void ScriptRun::check_exit() {
  if (exited_) return;
  siginfo_t info{};
  // WNOWAIT leaves it a zombie, so its process group id cannot be reused while we kill the
  // group below.
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == EINTR) return;
    // Someone else reaped it (a waitpid(-1) elsewhere in the process): it is gone.
    result_.wait_error = std::string("waitid: ") + std::strerror(errno);
    exited_ = true;
    pidfd_.reset();
    return;
  }
  if (info.si_pid == 0) return;  // still running
  // Anything it left running in its group would hold the output open or outlive the run.
  kill_group_and_reap();
}

void ScriptRun::kill_group_and_reap() {
  if (exited_) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  pid_t rc;
  while ((rc = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  if (rc == pid_) {
    result_.wait_status = status;
  } else {
    result_.wait_error = std::string("waitpid: ") + std::strerror(errno);
  }
  exited_ = true;
  pidfd_.reset();
}

void ScriptRun::finish() {
  out_.reset();
  err_.reset();
  result_.elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - started_);
  done_ = true;
}

ScriptResult run_script(const std::vector<std::string>& argv, const ScriptLimits& limits) {
  try {
    ScriptRun run(argv, limits);
    while (true) {
      run.advance();
      if (run.done()) return run.result();
      auto fds = run.poll_fds();
      int rc = ::poll(fds.data(), fds.size(), poll_millis(SteadyClock::now(), run.deadline()));
      if (rc < 0 && errno != EINTR) throw Error(std::string("poll: ") + std::strerror(errno));
    }
  } catch (const Error& e) {
    ScriptResult result;
    result.start_error = e.what();
    return result;
  }
}

}  // namespace cohort::discovery
