// WorkerGroup with real child processes: exits collected by pid only (so the host discovery
// script's status is never stolen), and the SIGKILL that follows an ignored SIGTERM.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include "launcher/spawn.h"
#include "launcher/worker_group.h"

using namespace cohort;
using namespace cohort::discovery;
using namespace std::chrono_literals;

namespace {

LaunchedWorker start(const std::string& script) {
  return LocalLauncher().launch("localhost", "test worker", {"/bin/sh", "-c", script}, {});
}

// Blocks until `pid` has exited, leaving it for whoever reaps it.
void await_exit(pid_t pid) {
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) == 0);
}

// Waits (bounded) until the worker's output pipe has something to read.
void await_output(WorkerGroup& group) {
  std::vector<pollfd> fds;
  group.add_poll_fds(fds);
  REQUIRE(::poll(fds.data(), fds.size(), 10000) > 0);
  group.forward_ready(fds);
}

}  // namespace

TEST_CASE("a worker group reaps its own workers and leaves other children alone") {
  WorkerGroup group(1000ms, {});
  LaunchedWorker worker = start("exit 3");
  pid_t worker_pid = worker.pid;
  group.add(7, std::move(worker), {"7", 7, {}});
  Spawned other =
      spawn_in_own_group({"/bin/sh", "-c", "exit 5"}, nullptr, {.out_fd = 1, .err_fd = 2},
                         /*search_path=*/false);
  REQUIRE(other.error == 0);
  await_exit(worker_pid);
  await_exit(other.pid);
  auto exits = group.reap();
  REQUIRE(exits.size() == 1);
  CHECK(exits[0].id == 7);
  CHECK(exits[0].pid == worker_pid);
  CHECK(WEXITSTATUS(exits[0].status) == 3);
  CHECK(group.all_exited());
  CHECK(group.reap().empty());  // reported once
  int status = 0;
  REQUIRE(::waitpid(other.pid, &status, 0) == other.pid);  // its status is still there
  CHECK(WEXITSTATUS(status) == 5);
}

TEST_CASE("a worker that ignores SIGTERM gets SIGKILL once the grace has passed") {
  WorkerGroup group(100ms, {});
  LaunchedWorker worker = start("trap '' TERM; echo ready; while :; do sleep 1; done");
  pid_t pid = worker.pid;
  group.add(0, std::move(worker), {"0", 0, {}});
  await_output(group);  // the trap is set
  CHECK_FALSE(group.next_deadline().has_value());
  group.stop(0, SIGTERM);
  auto deadline = group.next_deadline();
  REQUIRE(deadline.has_value());
  CHECK(group.running(0));
  // Time is what is under test here: wait for the grace to pass, then act on it.
  ::poll(nullptr, 0, poll_millis(steady_now(), *deadline));
  group.on_time();
  await_exit(pid);
  auto exits = group.reap();
  REQUIRE(exits.size() == 1);
  CHECK(WIFSIGNALED(exits[0].status));
  CHECK(WTERMSIG(exits[0].status) == SIGKILL);
}
