#include "launcher/spawn.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

extern char** environ;

namespace cohort::discovery {
namespace {

// posix_spawn takes `char* const[]`, so the strings are copied into `storage` to be pointed at.
std::vector<char*> c_strings(std::vector<std::string>& storage) {
  std::vector<char*> out;
  for (auto& s : storage) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The signals whose dispositions cohortrun changes for itself and its children get back.
sigset_t defaulted_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE}) sigaddset(&set, sig);
  return set;
}

// In the child between fork() and exec: async-signal-safe calls only. Reports a failure's errno
// through `report` (close-on-exec, so a successful exec closes it with nothing written).
[[noreturn]] void exec_child(char* const* argv, char* const* envp, const SpawnIo& io, pid_t parent,
                             int report, bool search_path) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before the line above
  ::setpgid(0, 0);
  sigset_t defaults = defaulted_signals();
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sigismember(&defaults, sig) == 1) ::signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int in = io.stdin_from_dev_null ? ::open("/dev/null", O_RDONLY) : io.in_fd;
  bool ok = (in < 0 || ::dup2(in, STDIN_FILENO) >= 0) && ::dup2(io.out_fd, STDOUT_FILENO) >= 0 &&
            ::dup2(io.err_fd, STDERR_FILENO) >= 0;
  if (ok) search_path ? ::execvpe(argv[0], argv, envp) : ::execve(argv[0], argv, envp);
  int error = errno;
  [[maybe_unused]] ssize_t n = ::write(report, &error, sizeof error);
  ::_exit(127);
}

// spawn_in_own_group's die_with_parent path: posix_spawn cannot set PR_SET_PDEATHSIG.
Spawned fork_in_own_group(char* const* argv, char* const* envp, const SpawnIo& io,
                          bool search_path) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return {.error = errno};
  pid_t parent = ::getpid();
  Spawned spawned;
  spawned.pid = ::fork();
  if (spawned.pid == 0) exec_child(argv, envp, io, parent, report[1], search_path);
  ::close(report[1]);
  if (spawned.pid < 0) {
    spawned.error = errno;
  } else if (::read(report[0], &spawned.error, sizeof spawned.error) == sizeof spawned.error) {
    ::waitpid(spawned.pid, nullptr, 0);  // exec failed: the child is gone, and nobody else reaps it
    spawned.pid = -1;
  } else {
    spawned.error = 0;
  }
  ::close(report[0]);
  return spawned;
}

}  // namespace

Spawned spawn_in_own_group(const std::vector<std::string>& argv,
                           const std::vector<std::string>* environment, SpawnIo io,
                           bool search_path) {
  std::vector<std::string> args = argv;
  auto c_args = c_strings(args);
  std::vector<std::string> env_storage;
  std::vector<char*> c_env;
  if (environment != nullptr) {
    env_storage = *environment;
    c_env = c_strings(env_storage);
  }
  char** envp = environment != nullptr ? c_env.data() : environ;
  if (io.die_with_parent) return fork_in_own_group(c_args.data(), envp, io, search_path);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (io.stdin_from_dev_null) {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  } else if (io.in_fd >= 0) {
    posix_spawn_file_actions_adddup2(&actions, io.in_fd, STDIN_FILENO);
  }
  posix_spawn_file_actions_adddup2(&actions, io.out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, io.err_fd, STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults = defaulted_signals();
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);  // cohortrun blocks signals; its children must not
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);  // own group, so stopping it reaches its children too
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  Spawned spawned;
  spawned.error = search_path
                      ? posix_spawnp(&spawned.pid, c_args[0], &actions, &attr, c_args.data(), envp)
                      : posix_spawn(&spawned.pid, c_args[0], &actions, &attr, c_args.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return spawned;
}

}  // namespace cohort::discovery
