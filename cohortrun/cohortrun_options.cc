#include "cohortrun/cohortrun_options.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "agent/agent_cli.h"
#include "base/decimal.h"
#include "base/host_port.h"
#include "cohort/errors.h"
#include "cohortrun/build_info.h"
#include "cohortrun/job_tunables.h"
#include "rendezvous/etcd_client.h"

namespace cohort::discovery {

const std::vector<std::string> kDiscoveryFlags = {"--discovery-interval", "--discovery-timeout",
                                                  "--slots-per-host"};
const std::vector<std::string> kElasticFlags = {"--max-np", "--elastic-timeout", "--reset-limit",
                                                "--blacklist-cooldown-range", "--checkin-timeout"};
const std::vector<std::string> kAgentFlags = {
    "--rdzv-endpoints", "--rdzv-id",        "--rdzv-ca-file",   "--rdzv-cert-file",
    "--rdzv-key-file",  "--nnodes",         "--nproc-per-node", "--node-name",
    "--node-address",   "--rdzv-lease-ttl", "--rdzv-last-call"};
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

namespace {

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

// A whole number from `lo` to `hi`, spelt as base/decimal.h says, as a CLI11 check. CLI11 itself
// reads integers with strtoll's base 0: "010" was 8, "0x10" 16, and " 7" and "+7" passed.
CLI::Validator whole_number_between(long long lo, long long hi) {
  return CLI::Validator(
      [=](std::string& input) -> std::string {
        if (parse_decimal<long long>(input, lo, hi)) return {};
        return decimal_refusal(input, lo, hi);
      },
      "N in [" + std::to_string(lo) + " - " + std::to_string(hi) + "]");
}

void add_elastic_options(CLI::App& app, CohortrunOptions& o) {
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
      ->check(whole_number_between(1, 4096));
  app.add_option("--min-np", o.min_np, "elastic: the fewest workers a round may have")
      ->check(whole_number_between(1, 1 << 20));
  app.add_option("--max-np", o.max_np, "elastic: the most workers (default: every usable slot)")
      ->check(whole_number_between(1, 1 << 20));
  app.add_option("--elastic-timeout", o.elastic_timeout_seconds,
                 "seconds the job may have fewer than --min-np usable slots")
      ->capture_default_str()
      ->check(seconds_between(0.0, 31536000.0));
  app.add_option("--reset-limit", o.reset_limit, "the most new rounds after the first")
      ->check(whole_number_between(0, 1 << 30));
  app.add_option("--blacklist-cooldown-range", o.cooldown_range,
                 "LO HI seconds: a failed slot or host returns after LO*2^(n-1), at most HI")
      ->check(seconds);
  app.add_option("--checkin-timeout", o.checkin_timeout_seconds,
                 "seconds the rest of a round gets to check in after one worker left it (should "
                 "exceed the workers' COHORT_PEER_TIMEOUT_SECONDS)")
      ->capture_default_str()
      ->check(seconds);
}

void add_remote_options(CLI::App& app, CohortrunOptions& o) {
  app.add_option("--ssh-port", o.launch.ssh_port, "port of sshd on the remote hosts")
      ->capture_default_str()
      ->check(whole_number_between(net::kLowestPort, net::kHighestPort));
  app.add_option("--ssh-identity-file", o.launch.ssh_identity_file,
                 "private key for ssh to the remote hosts")
      ->check(CLI::ExistingFile);
  app.add_option("--ssh-config-file", o.launch.ssh_config_file,
                 "ssh client configuration file (ssh -F) for the remote hosts")
      ->check(CLI::ExistingFile);
  app.add_option("--network-interface", o.launch.network_interface,
                 "workers listen on this interface's IPv4 address on their own host");
}

void add_agent_options(CLI::App& app, CohortrunOptions& o) {
  app.add_option("--rdzv-backend", o.rdzv_backend,
                 "builtin: this cohortrun holds the job; etcd: one agent per node, through etcd")
      ->capture_default_str()
      ->check(CLI::IsMember({"builtin", "etcd"}));
  app.add_option("--rdzv-endpoints", o.rdzv_endpoints, "agent mode: etcd's URLs, comma-separated")
      ->check(CLI::Validator(
          [](std::string& urls) -> std::string {
            try {
              rendezvous::parse_etcd_endpoints(urls);
              return {};
            } catch (const InvalidArgument& e) {
              return e.what();
            }
          },
          "URL[,URL...]"));
  app.add_option("--rdzv-id", o.rdzv_id, "agent mode: the job's id, the same on every node")
      ->check(CLI::Validator(
          [](std::string& id) -> std::string {
            return valid_job_id(id) ? "" : "'" + id + "' is not a job id (letters, digits, . _ -)";
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
      ->check(whole_number_between(1, 3600));
  app.add_option("--rdzv-last-call", o.rdzv_last_call_seconds,
                 "agent mode: seconds the first round waits for more than MIN nodes, up to MAX")
      ->capture_default_str()
      ->check(seconds_between(0.0, 3600.0));
  app.add_option("--nnodes", o.nnodes, "agent mode: N or MIN:MAX nodes in the job")
      ->capture_default_str();
  app.add_option("--nproc-per-node", o.nproc_per_node, "agent mode: workers on this node")
      ->capture_default_str()
      ->check(whole_number_between(1, 4096));
  app.add_option("--node-name", o.node_name,
                 "agent mode: this node's name in the job (default: the host name)");
  app.add_option("--node-address", o.node_address,
                 "agent mode: where this node's workers listen (default: the address towards etcd)")
      ->check(CLI::Validator(
          [](std::string& address) -> std::string {
            if (net::valid_host_name(address)) return "";
            return "'" + address + "' is not a host name or an IPv4 address";
          },
          "ADDR"));
}

// The flags of job_tunables.h, each under horovodrun's name too where that differs.
void add_tunable_options(CLI::App& app, CohortrunOptions& o) {
  for (const auto& t : job_tunables()) {
    std::string names = std::string(t.flag) + (t.horovod ? std::string(",") + t.horovod : "");
    std::string help = std::string(t.help) + " (" + t.variable + ")";
    if (t.kind == JobTunable::Kind::kSwitch) {
      app.add_flag_callback(
          names, [&o, flag = t.flag] { o.tunables[flag] = "1"; }, help);
    } else {
      app.add_option_function<std::string>(
             names, [&o, flag = t.flag](const std::string& v) { o.tunables[flag] = v; }, help)
          ->type_name(t.value);
    }
  }
}

// Each option `app` knows, by every name, with the number of values one use of it takes.
std::map<std::string, int> option_arity(const CLI::App& app) {
  std::map<std::string, int> arity;
  for (const CLI::Option* option : app.get_options()) {
    if (!option->nonpositional()) continue;
    int values = option->get_items_expected_max();  // 0 for a flag, 2 for a pair
    for (const auto& name : option->get_snames()) arity["-" + name] = values;
    for (const auto& name : option->get_lnames()) arity["--" + name] = values;
  }
  arity["-np"] = arity.at("--np");
  return arity;
}

// The workers' environment and output, and the launcher's own logs, events and metrics.
void add_output_options(CLI::App& app, CohortrunOptions& o) {
  app.add_option("-x", o.exports,
                 "NAME=VALUE or NAME (its value here): an environment variable for every worker, "
                 "as mpirun -x; may be repeated")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--output-filename", o.output_directory,
                 "DIR: also write each rank's stdout and stderr to files under DIR, as horovodrun");
  app.add_flag("--prefix-timestamp,--prefix-output-with-timestamp", o.prefix_timestamp,
               "put the UTC time before every line of the workers' output");
  app.add_option("--console-ranks", o.console_ranks,
                 "LIST, e.g. 0 or 0,2-3: only these ranks' lines reach the console (default all)");
  app.add_option("--event-log", o.event_log,
                 "FILE: append one JSON object per line for every launcher event");
  app.add_option("--metrics-file", o.metrics_file,
                 "FILE: keep the job's metrics there in Prometheus' text format (node_exporter's "
                 "textfile collector)");
  app.add_flag("--verbose", o.verbose, "log what cohortrun does (--log-level info)");
  app.add_option("--log-level", o.log_level,
                 "trace, debug, info, warning or error: cohortrun's and the workers' log level");
}

}  // namespace

void add_options(CLI::App& app, CohortrunOptions& o, std::string& program) {
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
  add_tunable_options(app, o);
  // As horovodrun: -v is --version, and --verbose has no short form.
  app.set_version_flag("-v,--version", version_text(), "print cohortrun's version and exit");
  app.add_flag_callback(
      "--check-build",
      [] {
        std::cout << build_report();
        throw CLI::Success();
      },
      "print which backends, launchers and framework bindings this build has, and exit");
  add_output_options(app, o);
  app.add_option("program", program, "the worker program, followed by its arguments")->required();
  app.prefix_command();
}

std::vector<std::string> normalized_args(const CLI::App& app, int argc, char** argv) {
  const std::map<std::string, int> options = option_arity(app);
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
    if (!values_follow && args[i].size() == option.size() + 1) {
      throw InvalidArgument("'" + args[i] + "' has no value after '=' (see cohortrun --help)");
    }
    if (option == "-np") args[i].insert(0, "-");  // "--np" or "--np=N"
    if (values_follow) i += static_cast<size_t>(known->second);
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them in reverse order
  return args;
}

std::vector<std::string> worker_command(const std::string& program, std::vector<std::string> rest,
                                        int argc, char** argv) {
  bool separated = std::find(argv + 1, argv + argc, std::string("--")) <
                   std::find(argv + 1, argv + argc, program);
  if (separated && !rest.empty() && rest.front() == "--") rest.erase(rest.begin());
  rest.insert(rest.begin(), program);
  return rest;
}

}  // namespace cohort::discovery
