#include "static_job/supervisor.h"

#include <poll.h>
#include <sys/wait.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "base/log.h"
#include "cohort/errors.h"
#include "launcher/event_fields.h"
#include "launcher/job_report.h"
#include "launcher/job_signals.h"

namespace cohort::discovery {

Supervisor::Supervisor(Fd signals, std::chrono::milliseconds term_grace,
                       const OutputOptions& output, JobEvents& events)
    : signals_(std::move(signals)), workers_(term_grace, output), events_(events) {}

void Supervisor::add(int rank, LaunchedWorker worker) {
  events_.emit("worker_start",
               {{"worker", rank}, {"rank", rank}, {"host", worker.host}, {"pid", worker.pid}});
  workers_.add(rank, std::move(worker), {std::to_string(rank), rank, std::nullopt});
}

int Supervisor::run() {
  for (const auto& exit : workers_.reap()) on_exit(exit);  // exited before we started watching
  while (!workers_.finished()) {
    std::vector<pollfd> fds{{signals_.get(), POLLIN, 0}};
    workers_.add_poll_fds(fds);
    auto deadline = workers_.next_deadline();
    int timeout = deadline ? poll_millis(steady_now(), *deadline) : -1;
    int rc = ::poll(fds.data(), fds.size(), timeout);
    if (rc < 0 && errno != EINTR) throw Error(std::string("poll: ") + std::strerror(errno));
    if (rc > 0) {
      if (fds[0].revents & POLLIN) on_signals();
      workers_.forward_ready(fds);
    }
    for (const auto& exit : workers_.reap()) on_exit(exit);
    workers_.on_time();
  }
  events_.emit("job_end", {{"exit_code", exit_code_}, {"reason", end_reason_}});
  return exit_code_;
}

void Supervisor::on_signals() {
  for (int sig : read_job_signals(signals_.get(), workers_)) {
    report(std::string("received SIG") + sigabbrev_np(sig) + "; stopping the workers");
    if (exit_code_ == 0) exit_code_ = 128 + sig;
    if (exit_code_ == 128 + sig) end_reason_ = std::string("received SIG") + sigabbrev_np(sig);
    stop_all(sig);
  }
}

void Supervisor::on_exit(const WorkerExit& exit) {
  bool failed = !(WIFEXITED(exit.status) && WEXITSTATUS(exit.status) == 0);
  nlohmann::json fields = {{"worker", exit.id},
                           {"rank", exit.id},
                           {"host", exit.host},
                           {"pid", exit.pid},
                           {"verdict", stopping_ ? "stopped"
                                       : failed  ? "failed"
                                                 : "finished"}};
  fields.update(exit_fields(exit.status));
  events_.emit("worker_exit", fields);
  if (!failed) return;
  std::string how = "rank " + std::to_string(exit.id) + " (pid " + std::to_string(exit.pid) +
                    " on " + exit.host + ") " + describe_exit(exit.status);
  if (stopping_) {
    log::info(how);
    return;
  }
  report(how + "; stopping the other workers");
  end_reason_ = how;
  exit_code_ = 1;
  stop_all(SIGTERM);
}

void Supervisor::abort(const std::string& why) {
  report(why + (workers_.empty() ? "" : "; stopping the workers already started"));
  end_reason_ = why;
  exit_code_ = 2;
  if (!stopping_) stop_all(SIGTERM);
}

void Supervisor::stop_all(int sig) {
  stopping_ = true;
  workers_.stop_all(sig);
}

}  // namespace cohort::discovery
