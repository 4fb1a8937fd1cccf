// cohortrun: starts a job's workers, serves their rendezvous, supervises them.
//   cohortrun -np 4 ./train
//   cohortrun -H host1:2,host2:2 ./train --epochs 3
//   cohortrun --hostfile hosts.txt -np 8 -- ./train
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <iostream>
#include <set>

#include "cohort/errors.h"
#include "core/log.h"
#include "discovery/host_manager.h"
#include "discovery/static_job.h"

namespace {

using namespace cohort;
using namespace cohort::discovery;

struct Options {
  std::string np;
  std::string hosts;
  std::string hostfile;
  double term_grace_seconds = 5;
  double start_timeout_seconds = 120;
  bool verbose = false;
  std::vector<std::string> command;
};

// 0 when not given: every slot.
int parse_np(const std::string& text) {
  if (text.empty()) return 0;
  int np = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), np);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw InvalidArgument("-np: '" + text + "' is not a whole number");
  }
  if (np < 1) throw InvalidArgument("-np must be at least 1, got " + text);
  return np;
}

HostManager job_hosts(const Options& o) {
  if (!o.hosts.empty()) return HostManager(parse_host_list(o.hosts));
  if (!o.hostfile.empty()) return HostManager(read_hostfile(o.hostfile));
  if (o.np.empty()) throw InvalidArgument("give -np N, or hosts with -H or --hostfile");
  return HostManager({{"localhost", parse_np(o.np)}});
}

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

int run(const Options& o) {
  return run_static_job(job_hosts(o), {.np = parse_np(o.np),
                                       .command = o.command,
                                       .term_grace = millis(o.term_grace_seconds),
                                       .start_timeout = millis(o.start_timeout_seconds)});
}

// CLI11 accepts only one-character short options, but "-np" is what mpirun and horovodrun users
// type: spell it "--np" before parsing, up to the worker command (whose own arguments stay as is).
// An option cohortrun does not know, before the program, is an error here: CLI11 would take it
// for the start of the worker command (and its value for the program).
std::vector<std::string> normalized_args(int argc, char** argv) {
  const std::set<std::string> takes_value = {"-n",
                                             "-np",
                                             "--np",
                                             "--num-proc",
                                             "-H",
                                             "--hosts",
                                             "--hostfile",
                                             "--term-grace-seconds",
                                             "--start-timeout"};
  const std::set<std::string> flags = {"-v", "--verbose", "-h", "--help"};
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--" || args[i].empty() || args[i][0] != '-') break;
    std::string option = args[i].substr(0, args[i].find('='));
    if (!takes_value.contains(option) && !flags.contains(option)) {
      throw InvalidArgument("unknown option '" + option +
                            "' before the program (see cohortrun --help)");
    }
    if (args[i] == "-np") args[i] = "--np";
    if (takes_value.contains(args[i])) ++i;
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them in reverse order
  return args;
}

void add_options(CLI::App& app, Options& o, std::string& program) {
  app.add_option("-n,--np,--num-proc", o.np, "number of workers (default: every slot)");
  auto* hosts = app.add_option("-H,--hosts", o.hosts, "hosts and slots: host:slots,host:slots");
  app.add_option("--hostfile", o.hostfile, "file of 'host slots=N' lines")->excludes(hosts);
  app.add_option("--term-grace-seconds", o.term_grace_seconds,
                 "after SIGTERM, how long workers get before SIGKILL")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--start-timeout", o.start_timeout_seconds,
                 "seconds: the longest any rendezvous wait may last on the server")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  app.add_flag("-v,--verbose", o.verbose, "log what cohortrun does");
  app.add_option("program", program, "the worker program, followed by its arguments")->required();
  app.prefix_command();
}

// The worker command: the program, then everything after it untouched, except the "--" that
// CLI11 hands back when it separated cohortrun's options from the program.
std::vector<std::string> worker_command(const std::string& program, std::vector<std::string> rest,
                                        int argc, char** argv) {
  bool separated = std::find(argv + 1, argv + argc, std::string("--")) <
                   std::find(argv + 1, argv + argc, program);
  if (separated && !rest.empty() && rest.front() == "--") rest.erase(rest.begin());
  rest.insert(rest.begin(), program);
  return rest;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string program;
  CLI::App app("cohortrun: start and supervise a Cohort job");
  add_options(app, o, program);
  std::vector<std::string> args;
  try {
    args = normalized_args(argc, argv);
  } catch (const InvalidArgument& e) {
    std::cerr << "cohortrun: " << e.what() << std::endl;
    return 2;
  }
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  o.command = worker_command(program, app.remaining(), argc, argv);
  log::set_prefix("[cohortrun]");
  if (o.verbose) log::set_level(log::Level::kInfo);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::cerr << "cohortrun: " << e.what() << std::endl;
    return 2;
  }
}
