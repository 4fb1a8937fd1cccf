// Starting children (launcher/spawn.h): a child started with die_with_parent dies with the
// process that started it, however that one dies; one that cannot be started reports why.
#include "launcher/spawn.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <thread>

using namespace cohort::discovery;

namespace {

// Running (or stopped), as opposed to gone or a zombie nobody reaped yet.
bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_text, comm, state;
  return static_cast<bool>(stat >> pid_text >> comm >> state) && state != "Z" && state != "X";
}

}  // namespace

TEST_CASE("a child started with die_with_parent is SIGKILLed when its parent is") {
  int pids[2];
  REQUIRE(::pipe(pids) == 0);
  pid_t parent = ::fork();
  if (parent == 0) {
    Spawned child = spawn_in_own_group({"sleep", "60"}, nullptr,
                                       {.out_fd = 1, .err_fd = 2, .die_with_parent = true}, true);
    [[maybe_unused]] ssize_t n = ::write(pids[1], &child.pid, sizeof child.pid);
    ::pause();
    ::_exit(0);
  }
  pid_t child = -1;
  REQUIRE(::read(pids[0], &child, sizeof child) == sizeof child);
  REQUIRE(child > 0);
  CHECK(alive(child));
  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (alive(child) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK_FALSE(alive(child));
  ::close(pids[0]);
  ::close(pids[1]);
}

TEST_CASE("die_with_parent reports a program that cannot be started") {
  Spawned spawned = spawn_in_own_group({"/nonexistent/program"}, nullptr,
                                       {.out_fd = 1, .err_fd = 2, .die_with_parent = true}, false);
  CHECK(spawned.pid == -1);
  CHECK(spawned.error == ENOENT);
}
