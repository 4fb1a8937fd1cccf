// Runs a benchmark as one forked process per rank, for the Gloo benchmarks that set up their own
// rendezvous (a FileStore in a temporary directory) instead of being started by cohortrun.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace cohort::bench {

// Forks `size` processes that each run `body(rank)` and exit, waits for all of them, and then
// removes `cleanup_dir` (only when every rank exited with status 0). Returns main()'s exit status:
// 0 when every rank succeeded and the directory was removed, 1 otherwise.
inline int run_forked_ranks(int size, const std::function<void(int rank)>& body,
                            const std::string& cleanup_dir) {
  std::vector<pid_t> children;
  for (int rank = 0; rank < size; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      body(rank);
      // _Exit: the exit handlers and static destructors copied from the parent are not the
      // child's to run.
      std::_Exit(0);
    }
    children.push_back(pid);
  }
  int failures = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::string cleanup = "rm -rf " + cleanup_dir;
  return failures == 0 && std::system(cleanup.c_str()) == 0 ? 0 : 1;
}

}  // namespace cohort::bench
