#include "launcher/ssh_launcher.h"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cerrno>
#include <cstring>
#include <map>

#include "base/launch_env.h"
#include "cohort/errors.h"
#include "launcher/spawn.h"
#include "launcher/worker_exports.h"

namespace cohort::discovery {
namespace {

std::string current_directory() {
  std::string dir(4096, '\0');
  if (::getcwd(dir.data(), dir.size()) == nullptr) {
    throw Error(std::string("getcwd: ") + std::strerror(errno));
  }
  dir.resize(std::strlen(dir.c_str()));
  return dir;
}

// What a remote worker gets, besides the secret: cohortrun's exported variables (the remote
// shell does not inherit them) overridden by the worker's `env`.
std::map<std::string, std::string> remote_environment(const std::vector<std::string>& env,
                                                      const LaunchOptions& options) {
  std::map<std::string, std::string> vars = exported_environment(options.exports);
  for (const auto& entry : env) {
    auto eq = entry.find('=');
    if (eq != std::string::npos) vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  if (!options.network_interface.empty()) vars[env::kNetworkInterface] = options.network_interface;
  return vars;
}

std::string secret_of(const std::vector<std::string>& env) {
  std::string prefix = std::string(env::kSecret) + "=";
  for (const auto& entry : env) {
    if (entry.starts_with(prefix)) return entry.substr(prefix.size());
  }
  throw Error(std::string("ssh launch without ") + env::kSecret);
}

}  // namespace

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> SshLauncher::ssh_argv(const std::string& host,
                                               const std::string& remote_command) const {
  // BatchMode: never prompt (nobody could answer); the keepalives bound how long a dead link
  // goes unnoticed by ssh itself; -T: no tty, so stdout and stderr stay apart.
  std::vector<std::string> argv = {"ssh",
                                   "-T",
                                   "-x",
                                   "-p",
                                   std::to_string(options_.ssh_port),
                                   "-o",
                                   "BatchMode=yes",
                                   "-o",
                                   "StrictHostKeyChecking=accept-new",
                                   "-o",
                                   "ConnectTimeout=10",
                                   "-o",
                                   "ServerAliveInterval=5",
                                   "-o",
                                   "ServerAliveCountMax=3"};
  if (!options_.ssh_identity_file.empty()) {
    argv.insert(argv.end(), {"-i", options_.ssh_identity_file, "-o", "IdentitiesOnly=yes"});
  }
  if (!options_.ssh_config_file.empty()) argv.insert(argv.end(), {"-F", options_.ssh_config_file});
  argv.insert(argv.end(), {"--", host, remote_command});
  return argv;
}

std::string SshLauncher::remote_command(const std::string& cwd,
                                        const std::vector<std::string>& argv,
                                        const std::vector<std::string>& env) const {
  std::string worker = "setsid env";
  for (const auto& [name, value] : remote_environment(env, options_)) {
    if (name != env::kSecret) worker += " " + shell_quote(name + "=" + value);
  }
  for (const auto& arg : argv) worker += " " + shell_quote(arg);
  std::string grace = std::to_string(options_.remote_term_grace_seconds);
  // An asynchronous command's stdin is /dev/null unless redirected, so the watcher reads ssh's
  // stdin through fd 3. A line USR1 or USR2 there is a signal cohortrun passes on (ssh has no
  // way to send one). End-of-file means the local ssh went away (or cohortrun closed the pipe):
  // the watcher then stops the worker's whole session: SIGTERM, SIGKILL after the grace.
  std::string script =
      "exec 3<&0\n"
      "cd " +
      shell_quote(cwd) +
      " || exit 127\n"
      "IFS= read -r " +
      env::kSecret +
      " || { echo 'cohortrun: no job secret on stdin' >&2; "
      "exit 127; }\n"
      "export " +
      env::kSecret + "\n" + worker +
      " </dev/null 3<&- &\n"
      "worker=$!\n"
      "( while IFS= read -r s; do case $s in USR1|USR2) kill -s $s -- -$worker;; esac; done; "
      "kill -s TERM -- -$worker; sleep " +
      grace +
      "; kill -s KILL -- -$worker ) <&3 >/dev/null 2>&1 &\n"
      "watcher=$!\n"
      "exec 3<&-\n"
      "wait $worker\n"
      "status=$?\n"
      "kill $watcher 2>/dev/null\n"
      "exit $status\n";
  return "exec /bin/sh -c " + shell_quote(script);
}

LaunchedWorker SshLauncher::launch(const std::string& host, const std::string& who,
                                   const std::vector<std::string>& argv,
                                   const std::vector<std::string>& env) {
  std::string secret = secret_of(env);
  auto [in_read, in_write] = make_cloexec_pipe();
  auto [out_read, out_write] = make_cloexec_pipe();
  auto [err_read, err_write] = make_cloexec_pipe();
  std::vector<std::string> ssh = ssh_argv(host, remote_command(current_directory(), argv, env));
  Spawned spawned = spawn_in_own_group(
      ssh, nullptr, {.out_fd = out_write.get(), .err_fd = err_write.get(), .in_fd = in_read.get()},
      /*search_path=*/true);
  if (spawned.error != 0) {
    throw Error("cannot start ssh to '" + host + "' for " + who + ": " +
                std::strerror(spawned.error));
  }
  // One line well under PIPE_BUF: the write cannot block or be split.
  std::string line = secret + "\n";
  if (::write(in_write.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    int error = errno;
    ::kill(-spawned.pid, SIGKILL);  // ssh must not go on without the secret, unwatched
    ::waitpid(spawned.pid, nullptr, 0);
    throw Error("cannot hand the job secret to ssh for " + who + ": " + std::strerror(error));
  }
  return {host, spawned.pid, std::move(out_read), std::move(err_read), std::move(in_write)};
}

}  // namespace cohort::discovery
