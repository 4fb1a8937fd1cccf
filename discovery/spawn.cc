#include "discovery/spawn.h"

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

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

}  // namespace

Spawned spawn_in_own_group(const std::vector<std::string>& argv,
                           const std::vector<std::string>* environment, SpawnIo io,
                           bool search_path) {
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
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);  // cohortrun blocks signals; its children must not
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);  // own group, so stopping it reaches its children too
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<std::string> args = argv;
  auto c_args = c_strings(args);
  std::vector<std::string> env_storage;
  std::vector<char*> c_env;
  if (environment != nullptr) {
    env_storage = *environment;
    c_env = c_strings(env_storage);
  }
  char** envp = environment != nullptr ? c_env.data() : environ;
  Spawned spawned;
  spawned.error = search_path
                      ? posix_spawnp(&spawned.pid, c_args[0], &actions, &attr, c_args.data(), envp)
                      : posix_spawn(&spawned.pid, c_args[0], &actions, &attr, c_args.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return spawned;
}

}  // namespace cohort::discovery
