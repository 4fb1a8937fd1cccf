#include "discovery/worker_launcher.h"

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>

#include "cohort/errors.h"

extern char** environ;

namespace cohort::discovery {
namespace {

// The launcher's environment with `extra` entries overriding same-named ones.
std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  std::map<std::string, std::string> vars;
  auto add = [&](const std::string& entry) {
    auto eq = entry.find('=');
    if (eq != std::string::npos) vars[entry.substr(0, eq)] = entry;
  };
  for (char** e = environ; *e != nullptr; ++e) add(*e);
  for (const auto& entry : extra) add(entry);
  std::vector<std::string> out;
  for (auto& [name, entry] : vars) out.push_back(std::move(entry));
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::pair<Fd, Fd> make_pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
  return {Fd(fds[0]), Fd(fds[1])};
}

}  // namespace

LaunchedWorker LocalLauncher::launch(const SlotAssignment& slot,
                                     const std::vector<std::string>& argv,
                                     const std::vector<std::string>& env) {
  auto [out_read, out_write] = make_pipe();
  auto [err_read, err_write] = make_pipe();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_write.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);  // the launcher blocks signals; workers must not
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);  // own group, so stopping it reaches its children too
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<std::string> args = argv;
  std::vector<std::string> environment = merged_environment(env);
  auto c_args = c_strings(args);
  auto c_env = c_strings(environment);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, c_args[0], &actions, &attr, c_args.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    throw Error("cannot start '" + argv[0] + "' for rank " + std::to_string(slot.rank) + ": " +
                std::strerror(rc));
  }
  return {slot.rank, slot.host, pid, std::move(out_read), std::move(err_read)};
}

std::unique_ptr<WorkerLauncher> launcher_for(const std::string& host) {
  if (is_local_host(host)) return std::make_unique<LocalLauncher>();
  throw InvalidArgument("host '" + host +
                        "' is not this machine, and launching over ssh is not implemented yet");
}

}  // namespace cohort::discovery
