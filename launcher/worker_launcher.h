// Starting one worker process on its host. Local hosts are spawned directly; remote hosts go
// through ssh (launcher/ssh_launcher.h) behind the same interface.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "base/fd.h"
#include "launcher/hosts.h"

namespace cohort::discovery {

struct LaunchedWorker {
  std::string host;
  pid_t pid = -1;  // also the worker's process group
  Fd out;          // the worker's stdout and stderr, read by the supervisor
  Fd err;
  Fd in;  // ssh's stdin, held open while the worker runs: its closing ends the remote worker
};

// How workers are reached and where they listen (cohortrun's --ssh-* and --network-interface).
struct LaunchOptions {
  int ssh_port = 22;
  std::string ssh_identity_file;  // empty: ssh's own choice of key
  std::string ssh_config_file;    // empty: ssh's default configuration files
  std::string network_interface;  // empty: workers listen on the address of their host's name
  // After the remote worker's ssh connection closes, how long it gets between SIGTERM and SIGKILL.
  int remote_term_grace_seconds = 5;
  // -x names: cohortrun's variables that remote workers receive beside the default set
  // (worker_exports.h).
  std::vector<std::string> exports;
};

class WorkerLauncher {
 public:
  virtual ~WorkerLauncher() = default;
  // `env` entries ("NAME=value") are added to the launcher's own environment. `who` names the
  // worker in errors ("rank 3", "worker 7").
  virtual LaunchedWorker launch(const std::string& host, const std::string& who,
                                const std::vector<std::string>& argv,
                                const std::vector<std::string>& env) = 0;
};

// Spawns the worker on this machine in its own process group, signals unblocked; with
// `die_with_parent`, the worker is SIGKILLed when this process dies (an agent's workers).
class LocalLauncher final : public WorkerLauncher {
 public:
  explicit LocalLauncher(std::string network_interface = "", bool die_with_parent = false)
      : network_interface_(std::move(network_interface)), die_with_parent_(die_with_parent) {}
  LaunchedWorker launch(const std::string& host, const std::string& who,
                        const std::vector<std::string>& argv,
                        const std::vector<std::string>& env) override;

 private:
  std::string network_interface_;
  bool die_with_parent_;
};

// The launcher for `host`: LocalLauncher for this machine's names, SshLauncher for any other.
std::unique_ptr<WorkerLauncher> launcher_for(const std::string& host,
                                             const LaunchOptions& options = {});

// Makes a pipe whose ends are closed on exec; throws cohort::Error.
std::pair<Fd, Fd> make_cloexec_pipe();

}  // namespace cohort::discovery
