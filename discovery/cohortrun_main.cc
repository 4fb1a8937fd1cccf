// cohortrun: starts a job's workers, serves their rendezvous, supervises them.
//   cohortrun -np 4 ./train
//   cohortrun -H host1:2,host2:2 ./train --epochs 3
//   cohortrun --hostfile hosts.txt -np 8 -- ./train
#include <CLI/CLI.hpp>
#include <iostream>
#include <set>

#include "cohort/errors.h"
#include "core/launch_env.h"
#include "core/log.h"
#include "discovery/hmac.h"
#include "discovery/hosts.h"
#include "discovery/rendezvous_server.h"
#include "discovery/supervisor.h"
#include "discovery/worker_launcher.h"

namespace {

using namespace cohort;
using namespace cohort::discovery;

struct Options {
  int np = 0;
  std::string hosts;
  std::string hostfile;
  double term_grace_seconds = 5;
  bool verbose = false;
  std::vector<std::string> command;
};

std::vector<HostSlots> job_hosts(const Options& o) {
  if (!o.hosts.empty()) return parse_host_list(o.hosts);
  if (!o.hostfile.empty()) return read_hostfile(o.hostfile);
  return {{"localhost", std::max(o.np, 1)}};
}

std::vector<std::string> worker_env(const SlotAssignment& slot, int port,
                                    const std::string& secret) {
  auto var = [](const char* name, const auto& value) {
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(value)>>) {
      return std::string(name) + "=" + std::to_string(value);
    } else {
      return std::string(name) + "=" + std::string(value);
    }
  };
  return {var(env::kRank, slot.rank),
          var(env::kSize, slot.size),
          var(env::kLocalRank, slot.local_rank),
          var(env::kLocalSize, slot.local_size),
          var(env::kCrossRank, slot.cross_rank),
          var(env::kCrossSize, slot.cross_size),
          var(env::kHostname, "127.0.0.1"),
          var(env::kRendezvousAddr, "127.0.0.1"),
          var(env::kRendezvousPort, port),
          var(env::kSecret, to_hex(secret))};
}

int run_job(const Options& o) {
  std::vector<HostSlots> hosts = job_hosts(o);
  int np = o.np > 0 ? o.np : 0;
  if (np == 0) {
    for (const auto& h : hosts) np += h.slots;
  }
  std::vector<SlotAssignment> slots = assign_slots(hosts, np);
  std::vector<std::unique_ptr<WorkerLauncher>> launchers;
  for (const auto& slot : slots) launchers.push_back(launcher_for(slot.host));

  Fd signals = block_job_signals();
  std::string secret = random_bytes(kSecretSize);
  RendezvousServer server("127.0.0.1", secret);
  log::info("rendezvous server on 127.0.0.1:", server.port(), "; starting ", np, " workers");
  Supervisor supervisor(std::move(signals),
                        std::chrono::milliseconds(static_cast<long>(o.term_grace_seconds * 1000)));
  for (size_t i = 0; i < slots.size(); ++i) {
    supervisor.add(
        launchers[i]->launch(slots[i], o.command, worker_env(slots[i], server.port(), secret)));
  }
  int code = supervisor.run();
  server.stop();
  return code;
}

// CLI11 accepts only one-character short options, but "-np" is what mpirun and horovodrun users
// type: spell it "--np" before parsing, up to the worker command (whose own arguments stay as is).
std::vector<std::string> normalized_args(int argc, char** argv) {
  const std::set<std::string> takes_value = {"-n", "-np",     "--np",       "--num-proc",
                                             "-H", "--hosts", "--hostfile", "--term-grace-seconds"};
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--" || args[i].empty() || args[i][0] != '-') break;
    if (args[i] == "-np") args[i] = "--np";
    if (takes_value.contains(args[i])) ++i;
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them in reverse order
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("cohortrun: start and supervise a Cohort job");
  app.add_option("-n,--np,--num-proc", o.np, "number of workers (default: all slots)")
      ->check(CLI::PositiveNumber);
  auto* hosts = app.add_option("-H,--hosts", o.hosts, "hosts and slots: host:slots,host:slots");
  app.add_option("--hostfile", o.hostfile, "file of 'host slots=N' lines")->excludes(hosts);
  app.add_option("--term-grace-seconds", o.term_grace_seconds,
                 "after SIGTERM, how long workers get before SIGKILL")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  app.add_flag("-v,--verbose", o.verbose, "log what cohortrun does");
  std::string program;
  app.add_option("program", program, "the worker program, followed by its arguments")->required();
  app.prefix_command();
  try {
    std::vector<std::string> args = normalized_args(argc, argv);
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  o.command.push_back(program);
  std::vector<std::string> rest = app.remaining();
  // CLI11 hands back the "--" that separated cohortrun's options from the program.
  bool separated = std::find(argv + 1, argv + argc, std::string("--")) <
                   std::find(argv + 1, argv + argc, program);
  if (separated && !rest.empty() && rest.front() == "--") rest.erase(rest.begin());
  o.command.insert(o.command.end(), rest.begin(), rest.end());
  log::set_prefix("[cohortrun]");
  if (o.verbose) log::set_level(log::Level::kInfo);
  try {
    return run_job(o);
  } catch (const std::exception& e) {
    std::cerr << "cohortrun: " << e.what() << std::endl;
    return 2;
  }
}
