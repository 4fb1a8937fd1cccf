// Starting one worker process on its host. Local hosts are spawned directly; remote hosts (ssh)
// plug in here later behind the same interface.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "core/fd.h"
#include "discovery/hosts.h"

namespace cohort::discovery {

struct LaunchedWorker {
  std::string host;
  pid_t pid = -1;  // also the worker's process group
  Fd out;          // the worker's stdout and stderr, read by the supervisor
  Fd err;
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

// Spawns the worker on this machine in its own process group, signals unblocked.
class LocalLauncher final : public WorkerLauncher {
 public:
  LaunchedWorker launch(const std::string& host, const std::string& who,
                        const std::vector<std::string>& argv,
                        const std::vector<std::string>& env) override;
};

// The launcher for `host`; throws InvalidArgument for hosts it cannot reach yet.
std::unique_ptr<WorkerLauncher> launcher_for(const std::string& host);

}  // namespace cohort::discovery
