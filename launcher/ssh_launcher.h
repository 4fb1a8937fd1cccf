// Starting a worker on another host through the system's ssh client. The job secret travels on
// ssh's stdin, never on a command line; the remote side ends the worker when that stdin closes,
// so killing the local ssh process ends the remote worker too. A line "USR1" or "USR2" written
// there later is sent on to the worker's session as that signal (WorkerGroup::pass_on).
#pragma once

#include <string>
#include <vector>

#include "launcher/worker_launcher.h"

namespace cohort::discovery {

class SshLauncher final : public WorkerLauncher {
 public:
  explicit SshLauncher(LaunchOptions options) : options_(std::move(options)) {}
  LaunchedWorker launch(const std::string& host, const std::string& who,
                        const std::vector<std::string>& argv,
                        const std::vector<std::string>& env) override;

  // The ssh client's argv for running `remote_command` on `host`.
  std::vector<std::string> ssh_argv(const std::string& host,
                                    const std::string& remote_command) const;

  // The shell command run on the remote host: enter `cwd`, read the secret from stdin, start the
  // worker with `env` (which holds no secret) in a session of its own, send it the signals named
  // on stdin, and end it when stdin closes.
  std::string remote_command(const std::string& cwd, const std::vector<std::string>& argv,
                             const std::vector<std::string>& env) const;

 private:
  LaunchOptions options_;
};

// `text` as one POSIX shell word: single-quoted, embedded quotes as '\''.
std::string shell_quote(const std::string& text);

}  // namespace cohort::discovery
