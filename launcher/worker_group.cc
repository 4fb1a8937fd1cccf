#include "launcher/worker_group.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "base/log.h"
#include "launcher/job_report.h"

namespace cohort::discovery {

WorkerGroup::WorkerGroup(std::chrono::milliseconds term_grace, const OutputOptions& output)
    : term_grace_(term_grace), output_(output) {}

void WorkerGroup::add(int id, LaunchedWorker worker, OutputSource source) {
  Worker w{.info = std::move(worker), .source = std::move(source)};
  w.out.fd = std::move(w.info.out);
  w.err.fd = std::move(w.info.err);
  w.err.is_stderr = true;
  workers_[id] = std::move(w);
}

void WorkerGroup::place(int id, int rank, int round) {
  auto it = workers_.find(id);
  if (it != workers_.end()) it->second.source = {std::to_string(rank), rank, round};
}

bool WorkerGroup::running(int id) const {
  auto it = workers_.find(id);
  return it != workers_.end() && !it->second.status;
}

bool WorkerGroup::all_exited() const {
  return std::all_of(workers_.begin(), workers_.end(),
                     [](const auto& kv) { return kv.second.status.has_value(); });
}

size_t WorkerGroup::open_streams() const {
  size_t open = 0;
  for (const auto& [id, w] : workers_) open += w.out.fd.valid() + w.err.fd.valid();
  return open;
}

void WorkerGroup::add_poll_fds(std::vector<pollfd>& fds) {
  polled_.clear();
  polled_from_ = fds.size();
  for (auto& [id, w] : workers_) {
    for (Stream* s : {&w.out, &w.err}) {
      if (!s->fd.valid()) continue;
      fds.push_back({s->fd.get(), POLLIN, 0});
      polled_.emplace_back(id, s);
    }
  }
}

void WorkerGroup::forward_ready(const std::vector<pollfd>& fds) {
  for (size_t i = 0; i < polled_.size() && polled_from_ + i < fds.size(); ++i) {
    if (fds[polled_from_ + i].revents & (POLLIN | POLLHUP | POLLERR)) {
      auto& [id, stream] = polled_[i];
      forward(workers_.at(id), *stream);
    }
  }
  polled_.clear();
}

std::vector<WorkerExit> WorkerGroup::reap() {
  std::vector<WorkerExit> exits;
  for (auto& [id, w] : workers_) {
    if (w.status) continue;
    int status = 0;
    pid_t rc;
    while ((rc = ::waitpid(w.info.pid, &status, WNOHANG)) < 0 && errno == EINTR) {
    }
    if (rc != w.info.pid) continue;  // still running (0), or not ours to wait for (-1)
    w.status = status;
    w.kill_at.reset();
    w.drain_until = steady_now() + kDrainTime;
    exits.push_back({id, w.info.host, w.info.pid, status, killed_by_passed_signal(w, status)});
  }
  return exits;
}

bool WorkerGroup::killed_by_passed_signal(const Worker& w, int status) {
  int sig = 0;
  if (WIFSIGNALED(status)) sig = WTERMSIG(status);
  // A remote worker's ssh session: the remote shell's `exit $status` (ssh_launcher.cc).
  if (w.info.in.valid() && WIFEXITED(status) && WEXITSTATUS(status) > 128) {
    sig = WEXITSTATUS(status) - 128;
  }
  return sig > 0 && sig < 64 && (w.passed_on & (uint64_t{1} << sig)) != 0;
}

void WorkerGroup::stop(int id, int sig) {
  auto it = workers_.find(id);
  if (it == workers_.end() || it->second.status) return;
  Worker& w = it->second;
  ::kill(-w.info.pid, sig);  // the worker's whole process group
  if (sig != SIGKILL && !w.kill_at) w.kill_at = steady_now() + term_grace_;
  if (sig == SIGKILL) w.kill_at.reset();
}

void WorkerGroup::stop_all(int sig) {
  for (auto& [id, w] : workers_) stop(id, sig);
}

void WorkerGroup::pass_on(int sig) {
  for (auto& [id, w] : workers_) {
    if (w.status) continue;
    if (sig > 0 && sig < 64) w.passed_on |= uint64_t{1} << sig;
    if (w.info.in.valid()) {
      write_all(w.info.in.get(), std::string(sigabbrev_np(sig)) + "\n");
    } else {
      ::kill(-w.info.pid, sig);
    }
  }
}

std::optional<TimePoint> WorkerGroup::next_deadline() const {
  std::optional<TimePoint> next;
  auto consider = [&](const std::optional<TimePoint>& t) {
    if (t && (!next || *t < *next)) next = t;
  };
  for (const auto& [id, w] : workers_) {
    if (!w.status) consider(w.kill_at);
    if (w.status && (w.out.fd.valid() || w.err.fd.valid())) consider(w.drain_until);
  }
  return next;
}

void WorkerGroup::on_time() {
  TimePoint now = steady_now();
  std::vector<int> due;
  size_t running = 0;
  for (auto& [id, w] : workers_) {
    running += !w.status;
    if (!w.status && w.kill_at && *w.kill_at <= now) due.push_back(id);
    if (w.status && w.drain_until && *w.drain_until <= now) give_up_output(w);
  }
  if (due.empty()) return;
  // The whole job stopping is the common case; a few stragglers are named.
  std::string who = "workers";
  if (due.size() < running) {
    who.clear();
    for (int id : due)
      who += (who.empty() ? "" : ", ") + ("[" + workers_.at(id).source.label + "]");
  }
  report(who + " still running " + std::to_string(term_grace_.count()) +
         " ms after being asked to stop; sending SIGKILL");
  for (int id : due) stop(id, SIGKILL);
}

void WorkerGroup::give_up_output(Worker& w) {
  if (!w.out.fd.valid() && !w.err.fd.valid()) return;
  log::warning("[", w.source.label,
               "] exited but its output is still open (a child it left running?); no longer "
               "forwarding it");
  for (Stream* s : {&w.out, &w.err}) {
    flush_partial(w, *s);
    s->fd.reset();
  }
}

void WorkerGroup::flush_partial(const Worker& w, Stream& s) {
  if (s.partial.empty()) return;
  output_.write(w.source, s.is_stderr, s.partial + "\n");
  s.partial.clear();
}

void WorkerGroup::forward(Worker& w, Stream& s) {
  char buf[65536];
  ssize_t n = ::read(s.fd.get(), buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {  // the worker closed its end: flush a last line without newline
    flush_partial(w, s);
    s.fd.reset();
    return;
  }
  s.partial.append(buf, static_cast<size_t>(n));
  size_t end = s.partial.rfind('\n');
  if (end == std::string::npos) return;
  output_.write(w.source, s.is_stderr, std::string_view(s.partial).substr(0, end + 1));
  s.partial.erase(0, end + 1);
}

const char* exit_verdict(const WorkerExit& exit, bool stopped) {
  if (stopped) return "stopped";
  if (exit.exited_zero()) return "finished";
  return exit.by_passed_signal ? "signalled" : "failed";
}

}  // namespace cohort::discovery
