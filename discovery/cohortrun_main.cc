// cohortrun: starts a job's workers, serves their rendezvous, supervises them.
//   cohortrun -np 4 ./train
//   cohortrun -H host1:2,host2:2 ./train --epochs 3
//   cohortrun --hostfile hosts.txt -np 8 -- ./train
//   cohortrun --host-discovery-script ./hosts.sh --min-np 2 --max-np 8 ./train   (elastic)
//   cohortrun -H host1:4,host2:4 --min-np 4 ./train      (fault tolerance on fixed hosts)
//   cohortrun --rdzv-backend etcd --rdzv-endpoints http://etcd:2379 --rdzv-id job7
//             --nnodes 2:4 --nproc-per-node 8 ./train         (one agent per node)
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <tuple>

#include "base/launch_env.h"
#include "base/log.h"
#include "base/net.h"
#include "cohort/errors.h"
#include "discovery/agent_cli.h"
#include "discovery/build_info.h"
#include "discovery/elastic_job.h"
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
  std::string log_level;  // empty: warning for cohortrun, the workers' own COHORT_LOG_LEVEL
  std::vector<std::string> command;
  // Elastic mode.
  std::string discovery_script;
  double discovery_interval_seconds = 1;
  double discovery_timeout_seconds = 10;
  int slots_per_host = 1;
  int min_np = 1;
  int max_np = 0;
  double elastic_timeout_seconds = 600;
  int reset_limit = 0;
  std::pair<double, double> cooldown_range;
  double checkin_timeout_seconds = 10;
  // Remote hosts.
  LaunchOptions launch;
  // Agent mode.
  std::string rdzv_backend = "builtin";
  std::string rdzv_endpoints;
  std::string rdzv_id;
  std::string rdzv_ca_file, rdzv_cert_file, rdzv_key_file;
  int rdzv_lease_ttl_seconds = 10;
  std::string nnodes = "1";
  int nproc_per_node = 1;
  std::string node_name;
  std::string node_address;
};

// Flags that only mean something with a discovery script, and with any elastic job.
const std::vector<std::string> kDiscoveryFlags = {"--discovery-interval", "--discovery-timeout",
                                                  "--slots-per-host"};
const std::vector<std::string> kElasticFlags = {"--max-np", "--elastic-timeout", "--reset-limit",
                                                "--blacklist-cooldown-range", "--checkin-timeout"};
// Flags of agent mode only, and the flags it refuses (the agents find each other through etcd).
const std::vector<std::string> kAgentFlags = {
    "--rdzv-endpoints", "--rdzv-id",       "--rdzv-ca-file",   "--rdzv-cert-file",
    "--rdzv-key-file",  "--nnodes",        "--nproc-per-node", "--node-name",
    "--node-address",   "--rdzv-lease-ttl"};
const std::vector<std::string> kNotAgentFlags = {"--np",
                                                 "--hosts",
                                                 "--hostfile",
                                                 "--host-discovery-script",
                                                 "--min-np",
                                                 "--max-np",
                                                 "--ssh-port",
                                                 "--ssh-identity-file",
                                                 "--ssh-config-file",
                                                 "--network-interface",
                                                 "--discovery-interval",
                                                 "--discovery-timeout",
                                                 "--slots-per-host"};

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

// A number of seconds from `lo` to `hi`, as a CLI11 check. CLI::Range lets NaN through (every
// comparison with it is false), and NaN or an infinity would then be converted to milliseconds,
// which is undefined behaviour (workers were killed at once and hosts blacklisted).
CLI::Validator seconds_between(double lo, double hi) {
  auto text = [](double v) {
    std::ostringstream out;
    out << std::setprecision(12) << v;  // 31536000, not 3.1536e+07
    return out.str();
  };
  std::string range = text(lo) + " to " + text(hi);
  return CLI::Validator(
      [=](std::string& input) -> std::string {
        double v = 0;
        bool number = CLI::detail::lexical_cast(input, v) && std::isfinite(v);
        if (number && v >= lo && v <= hi) return {};
        return "'" + input + "' is not a number of seconds from " + range;
      },
      "SECONDS in [" + text(lo) + " - " + text(hi) + "]");
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

LaunchOptions launch_options(const Options& o) {
  LaunchOptions launch = o.launch;
  launch.remote_term_grace_seconds = static_cast<int>(std::ceil(o.term_grace_seconds));
  return launch;
}

int run_static(const Options& o) {
  return run_static_job(job_hosts(o), {.np = parse_np(o.np),
                                       .command = o.command,
                                       .term_grace = millis(o.term_grace_seconds),
                                       .start_timeout = millis(o.start_timeout_seconds),
                                       .launch = launch_options(o)});
}

// Refuses flag combinations that contradict each other, naming them.
void check_mode(const Options& o, const CLI::App& app) {
  bool script = app.count("--host-discovery-script") > 0;
  bool min_np = app.count("--min-np") > 0;
  bool hosts = !o.hosts.empty() || !o.hostfile.empty();
  if (script && hosts) {
    throw InvalidArgument(
        "--host-discovery-script cannot be combined with -H or --hostfile: the script says "
        "which hosts the job has");
  }
  if ((script || min_np) && !o.np.empty()) {
    throw InvalidArgument(
        "-np cannot be combined with --host-discovery-script or --min-np: an elastic job runs "
        "between --min-np and --max-np workers");
  }
  if (min_np && !script && !hosts) {
    throw InvalidArgument(
        "--min-np needs --host-discovery-script, or hosts with -H or --hostfile (fault "
        "tolerance on fixed hosts)");
  }
  for (const auto& flag : kDiscoveryFlags) {
    if (!script && app.count(flag) > 0) {
      throw InvalidArgument(flag + " needs --host-discovery-script");
    }
  }
  for (const auto& flag : kElasticFlags) {
    if (!script && !min_np && app.count(flag) > 0) {
      throw InvalidArgument(flag +
                            " needs an elastic job: --host-discovery-script, or --min-np with "
                            "-H or --hostfile");
    }
  }
}

ElasticJobOptions elastic_options(const Options& o, const CLI::App& app) {
  ElasticJobOptions e{.command = o.command,
                      .discovery_interval = millis(o.discovery_interval_seconds),
                      .discovery_timeout = millis(o.discovery_timeout_seconds),
                      .slots_per_host = o.slots_per_host,
                      .checkin_timeout = millis(o.checkin_timeout_seconds),
                      .term_grace = millis(o.term_grace_seconds),
                      .start_timeout = millis(o.start_timeout_seconds),
                      .launch = launch_options(o)};
  if (!o.discovery_script.empty()) {
    e.discovery_script = o.discovery_script;
  } else {
    e.fixed_hosts = job_hosts(o).hosts();
    int total = HostManager(e.fixed_hosts).total_slots();
    if (o.min_np > total) {
      throw InvalidArgument("--min-np " + std::to_string(o.min_np) + " needs " +
                            std::to_string(o.min_np) + " slots but the hosts offer only " +
                            std::to_string(total));
    }
  }
  e.hosts.min_np = o.min_np;
  if (app.count("--max-np") > 0) e.hosts.max_np = o.max_np;
  e.hosts.elastic_timeout = millis(o.elastic_timeout_seconds);
  if (app.count("--reset-limit") > 0) e.hosts.reset_limit = o.reset_limit;
  if (app.count("--blacklist-cooldown-range") > 0) {
    auto [lo, hi] = o.cooldown_range;
    e.hosts.cooldown = CooldownRange{millis(lo), millis(hi)};
  }
  return e;
}

AgentOptions agent_options(const Options& o, const CLI::App& app) {
  for (const auto& flag : kNotAgentFlags) {
    if (app.count(flag) > 0)
      throw InvalidArgument(flag + " cannot be combined with --rdzv-backend etcd");
  }
  if (o.rdzv_endpoints.empty() || o.rdzv_id.empty()) {
    throw InvalidArgument("--rdzv-backend etcd needs --rdzv-endpoints and --rdzv-id");
  }
  AgentOptions a{.etcd = {.endpoints = rendezvous::parse_etcd_endpoints(o.rdzv_endpoints),
                          .ca_file = o.rdzv_ca_file,
                          .cert_file = o.rdzv_cert_file,
                          .key_file = o.rdzv_key_file},
                 .job_id = o.rdzv_id,
                 .node = o.node_name.empty() ? net::local_host_name() : o.node_name,
                 .nproc_per_node = o.nproc_per_node,
                 .command = o.command,
                 .secret = agent_secret(std::getenv(env::kSecret)),
                 .lease_ttl = std::chrono::seconds(o.rdzv_lease_ttl_seconds),
                 .checkin_timeout = millis(o.checkin_timeout_seconds),
                 .elastic_timeout = millis(o.elastic_timeout_seconds),
                 .start_timeout = millis(o.start_timeout_seconds),
                 .term_grace = millis(o.term_grace_seconds)};
  std::tie(a.min_nodes, a.max_nodes) = parse_nnodes(o.nnodes);
  a.address = o.node_address.empty() ? default_node_address(a.etcd.endpoints[0]) : o.node_address;
  if (app.count("--reset-limit") > 0) a.reset_limit = o.reset_limit;
  if (const char* fault = std::getenv(env::kFaultAgentKillAt)) {
    a.kill_when_planning = parse_agent_fault(fault);
  }
  if (app.count("--blacklist-cooldown-range") > 0) {
    a.cooldown = CooldownRange{millis(o.cooldown_range.first), millis(o.cooldown_range.second)};
  }
  return a;
}

int run(const Options& o, const CLI::App& app) {
  if (o.rdzv_backend == "etcd") return run_agent(agent_options(o, app));
  for (const auto& flag : kAgentFlags) {
    if (app.count(flag) > 0) throw InvalidArgument(flag + " needs --rdzv-backend etcd");
  }
  check_mode(o, app);
  if (app.count("--host-discovery-script") == 0 && app.count("--min-np") == 0) {
    return run_static(o);
  }
  return run_elastic_job(elastic_options(o, app));
}

// CLI11 accepts only one-character short options, but "-np" is what mpirun and horovodrun users
// type: spell it "--np" before parsing, up to the worker command (whose own arguments stay as is).
// An option cohortrun does not know, before the program, is an error here: CLI11 would take it
// for the start of the worker command (and its value for the program).
std::vector<std::string> normalized_args(int argc, char** argv) {
  // Each option cohortrun knows, with the number of values it takes.
  const std::map<std::string, int> options = {{"-n", 1},
                                              {"-np", 1},
                                              {"--np", 1},
                                              {"--num-proc", 1},
                                              {"-H", 1},
                                              {"--hosts", 1},
                                              {"--hostfile", 1},
                                              {"--term-grace-seconds", 1},
                                              {"--start-timeout", 1},
                                              {"--host-discovery-script", 1},
                                              {"--discovery-interval", 1},
                                              {"--discovery-timeout", 1},
                                              {"--slots-per-host", 1},
                                              {"--min-np", 1},
                                              {"--max-np", 1},
                                              {"--elastic-timeout", 1},
                                              {"--reset-limit", 1},
                                              {"--blacklist-cooldown-range", 2},
                                              {"--checkin-timeout", 1},
                                              {"--ssh-port", 1},
                                              {"--ssh-identity-file", 1},
                                              {"--ssh-config-file", 1},
                                              {"--network-interface", 1},
                                              {"--rdzv-backend", 1},
                                              {"--rdzv-endpoints", 1},
                                              {"--rdzv-id", 1},
                                              {"--rdzv-ca-file", 1},
                                              {"--rdzv-cert-file", 1},
                                              {"--rdzv-key-file", 1},
                                              {"--rdzv-lease-ttl", 1},
                                              {"--nnodes", 1},
                                              {"--nproc-per-node", 1},
                                              {"--node-name", 1},
                                              {"--node-address", 1},
                                              {"-v", 0},
                                              {"--version", 0},
                                              {"--check-build", 0},
                                              {"--verbose", 0},
                                              {"--log-level", 1},
                                              {"-h", 0},
                                              {"--help", 0}};
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--" || args[i].empty() || args[i][0] != '-') break;
    std::string option = args[i].substr(0, args[i].find('='));
    auto known = options.find(option);
    if (known == options.end()) {
      throw InvalidArgument("unknown option '" + option +
                            "' before the program (see cohortrun --help)");
    }
    bool values_follow = option == args[i];  // not "--option=value"
    if (args[i] == "-np") args[i] = "--np";
    if (values_follow) i += static_cast<size_t>(known->second);
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them in reverse order
  return args;
}

void add_elastic_options(CLI::App& app, Options& o) {
  auto seconds = seconds_between(0.001, 86400.0);
  app.add_option("--host-discovery-script", o.discovery_script,
                 "elastic mode: an executable printing 'host' or 'host:slots' lines");
  app.add_option("--discovery-interval", o.discovery_interval_seconds,
                 "seconds from the end of one discovery run to the start of the next")
      ->capture_default_str()
      ->check(seconds);
  app.add_option("--discovery-timeout", o.discovery_timeout_seconds,
                 "seconds one discovery run may take before it is killed")
      ->capture_default_str()
      ->check(seconds);
  app.add_option("--slots-per-host", o.slots_per_host, "slots of a discovered host without ':N'")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--min-np", o.min_np, "elastic: the fewest workers a round may have")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--max-np", o.max_np, "elastic: the most workers (default: every usable slot)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--elastic-timeout", o.elastic_timeout_seconds,
                 "seconds the job may have fewer than --min-np usable slots")
      ->capture_default_str()
      ->check(seconds_between(0.0, 31536000.0));
  app.add_option("--reset-limit", o.reset_limit, "the most new rounds after the first")
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("--blacklist-cooldown-range", o.cooldown_range,
                 "LO HI seconds: a failed slot or host returns after LO*2^(n-1), at most HI")
      ->check(seconds);
  app.add_option("--checkin-timeout", o.checkin_timeout_seconds,
                 "seconds the rest of a round gets to check in after one worker left it (should "
                 "exceed the workers' COHORT_PEER_TIMEOUT_SECONDS)")
      ->capture_default_str()
      ->check(seconds);
}

void add_remote_options(CLI::App& app, Options& o) {
  app.add_option("--ssh-port", o.launch.ssh_port, "port of sshd on the remote hosts")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
  app.add_option("--ssh-identity-file", o.launch.ssh_identity_file,
                 "private key for ssh to the remote hosts")
      ->check(CLI::ExistingFile);
  app.add_option("--ssh-config-file", o.launch.ssh_config_file,
                 "ssh client configuration file (ssh -F) for the remote hosts")
      ->check(CLI::ExistingFile);
  app.add_option("--network-interface", o.launch.network_interface,
                 "workers listen on this interface's IPv4 address on their own host");
}

void add_agent_options(CLI::App& app, Options& o) {
  app.add_option("--rdzv-backend", o.rdzv_backend,
                 "builtin: this cohortrun holds the job; etcd: one agent per node, through etcd")
      ->capture_default_str()
      ->check(CLI::IsMember({"builtin", "etcd"}));
  app.add_option("--rdzv-endpoints", o.rdzv_endpoints, "agent mode: etcd's URLs, comma-separated");
  app.add_option("--rdzv-id", o.rdzv_id, "agent mode: the job's id, the same on every node")
      ->check(CLI::Validator(
          [](std::string& id) -> std::string {
            bool ok = !id.empty() && id.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
                                         "KLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos;
            return ok ? "" : "'" + id + "' is not a job id (letters, digits, . _ -)";
          },
          "ID"));
  app.add_option("--rdzv-ca-file", o.rdzv_ca_file, "agent mode: CA of etcd's certificate (https)")
      ->check(CLI::ExistingFile);
  app.add_option("--rdzv-cert-file", o.rdzv_cert_file, "agent mode: client certificate for etcd")
      ->check(CLI::ExistingFile);
  app.add_option("--rdzv-key-file", o.rdzv_key_file, "agent mode: client key for etcd")
      ->check(CLI::ExistingFile);
  app.add_option("--rdzv-lease-ttl", o.rdzv_lease_ttl_seconds,
                 "agent mode: seconds after an agent's death at which the others count it gone")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  app.add_option("--nnodes", o.nnodes, "agent mode: N or MIN:MAX nodes in the job")
      ->capture_default_str();
  app.add_option("--nproc-per-node", o.nproc_per_node, "agent mode: workers on this node")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--node-name", o.node_name,
                 "agent mode: this node's name in the job (default: the host name)");
  app.add_option(
      "--node-address", o.node_address,
      "agent mode: where this node's workers listen (default: the address towards etcd)");
}

void add_options(CLI::App& app, Options& o, std::string& program) {
  app.add_option("-n,--np,--num-proc", o.np, "number of workers (default: every slot)");
  auto* hosts = app.add_option("-H,--hosts", o.hosts, "hosts and slots: host:slots,host:slots");
  app.add_option("--hostfile", o.hostfile, "file of 'host slots=N' lines")->excludes(hosts);
  app.add_option("--term-grace-seconds", o.term_grace_seconds,
                 "after SIGTERM, how long workers get before SIGKILL")
      ->capture_default_str()
      ->check(seconds_between(0.0, 3600.0));
  app.add_option("--start-timeout", o.start_timeout_seconds,
                 "seconds: the longest any rendezvous wait may last on the server")
      ->capture_default_str()
      ->check(seconds_between(0.001, 86400.0));
  add_elastic_options(app, o);
  add_remote_options(app, o);
  add_agent_options(app, o);
  // As horovodrun: -v is --version, and --verbose has no short form.
  app.set_version_flag("-v,--version", version_text(), "print cohortrun's version and exit");
  app.add_flag_callback(
      "--check-build",
      [] {
        std::cout << build_report();
        throw CLI::Success();
      },
      "print which backends, launchers and framework bindings this build has, and exit");
  app.add_flag("--verbose", o.verbose, "log what cohortrun does (--log-level info)");
  app.add_option("--log-level", o.log_level,
                 "trace, debug, info, warning or error: cohortrun's and the workers' log level");
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

// --log-level: this process's level, and the workers' through COHORT_LOG_LEVEL, which they
// inherit (and remote workers are sent, as every COHORT_* variable is).
void apply_log_level(const std::string& text) {
  if (text.empty()) return;
  try {
    log::set_level(log::parse_level(text));
  } catch (const InvalidArgument&) {
    throw InvalidArgument("--log-level: '" + text +
                          "' is not trace, debug, info, warning or error (see cohortrun --help)");
  }
  ::setenv("COHORT_LOG_LEVEL", text.c_str(), 1);
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
    // --help exits 0; every bad argument exits 2, as documented, rather than CLI11's own codes
    // (105 for a value out of range, 106 for one that does not convert, ...).
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "cohortrun: " << e.what() << " (see cohortrun --help)" << std::endl;
    return 2;
  }
  o.command = worker_command(program, app.remaining(), argc, argv);
  log::set_prefix("[cohortrun]");
  if (o.verbose) log::set_level(log::Level::kInfo);
  try {
    apply_log_level(o.log_level);
    return run(o, app);
  } catch (const std::exception& e) {
    std::cerr << "cohortrun: " << e.what() << std::endl;
    return 2;
  }
}
