#include "launcher/worker_launcher.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "base/launch_env.h"
#include "base/net.h"
#include "cohort/errors.h"
#include "launcher/spawn.h"
#include "launcher/ssh_launcher.h"

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

}  // namespace

std::pair<Fd, Fd> make_cloexec_pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
  return {Fd(fds[0]), Fd(fds[1])};
}

LaunchedWorker LocalLauncher::launch(const std::string& host, const std::string& who,
                                     const std::vector<std::string>& argv,
                                     const std::vector<std::string>& env) {
  auto [out_read, out_write] = make_cloexec_pipe();
  auto [err_read, err_write] = make_cloexec_pipe();
  std::vector<std::string> environment = merged_environment(env);
  if (!network_interface_.empty()) {
    environment.push_back(std::string(env::kNetworkInterface) + "=" + network_interface_);
  }
  Spawned spawned = spawn_in_own_group(
      argv, &environment,
      {.out_fd = out_write.get(), .err_fd = err_write.get(), .die_with_parent = die_with_parent_},
      /*search_path=*/true);
  if (spawned.error != 0) {
    throw Error("cannot start '" + argv[0] + "' for " + who + ": " + std::strerror(spawned.error));
  }
  return {host, spawned.pid, std::move(out_read), std::move(err_read), Fd()};
}

std::unique_ptr<WorkerLauncher> launcher_for(const std::string& host,
                                             const LaunchOptions& options) {
  if (is_local_host(host)) return std::make_unique<LocalLauncher>(options.network_interface);
  try {
    net::local_ipv4_towards(host);  // a name that does not resolve fails here, before any ssh
  } catch (const Error& e) {
    throw InvalidArgument("host '" + host + "' cannot be reached: " + e.what());
  }
  return std::make_unique<SshLauncher>(options);
}

}  // namespace cohort::discovery
