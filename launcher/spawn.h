// Starting a child program the way cohortrun starts everything it runs (workers and the host
// discovery script): in a process group of its own, so one kill() reaches whatever it starts,
// with the signal mask and the dispositions cohortrun changed for itself put back to defaults.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace cohort::discovery {

struct SpawnIo {
  int out_fd = -1;  // becomes the child's stdout
  int err_fd = -1;  // becomes the child's stderr
  // /dev/null as the child's stdin; when false it inherits this process's stdin.
  bool stdin_from_dev_null = false;
  int in_fd = -1;  // when set, becomes the child's stdin
  // The child is SIGKILLed when this process dies, however it dies: an agent's workers must not
  // outlive it (agent/agent_job.h). Costs a fork() instead of posix_spawn's vfork.
  bool die_with_parent = false;
};

struct Spawned {
  pid_t pid = -1;
  int error = 0;  // the errno of a failed start; 0 when it started. Callers word their own message.
};

// `environment` entries are "NAME=value"; nullptr means the child inherits this process's
// environment. `search_path` looks argv[0] up in PATH (posix_spawnp) instead of taking it as a
// path.
Spawned spawn_in_own_group(const std::vector<std::string>& argv,
                           const std::vector<std::string>* environment, SpawnIo io,
                           bool search_path);

}  // namespace cohort::discovery
