// cohortrun: starts a job's workers, serves their rendezvous, supervises them.
//   cohortrun -np 4 ./train
//   cohortrun -H host1:2,host2:2 ./train --epochs 3
//   cohortrun --hostfile hosts.txt -np 8 -- ./train
//   cohortrun --host-discovery-script ./hosts.sh --min-np 2 --max-np 8 ./train   (elastic)
//   cohortrun -H host1:4,host2:4 --min-np 4 ./train      (fault tolerance on fixed hosts)
//   cohortrun --rdzv-backend etcd --rdzv-endpoints http://etcd:2379 --rdzv-id job7
//             --nnodes 2:4 --nproc-per-node 8 ./train         (one agent per node)
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <set>
#include <tuple>

#include "agent/agent_cli.h"
#include "agent/agent_job.h"
#include "base/decimal.h"
#include "base/launch_env.h"
#include "base/log.h"
#include "base/net.h"
#include "cohort/errors.h"
#include "cohortrun/cohortrun_options.h"
#include "cohortrun/job_tunables.h"
#include "cohortrun/operator_env.h"
#include "cohortrun/worker_files.h"
#include "elastic_job/elastic_job.h"
#include "launcher/host_manager.h"
#include "launcher/worker_exports.h"
#include "static_job/static_job.h"

namespace {

using namespace cohort;
using namespace cohort::discovery;
using Options = CohortrunOptions;

// 0 when not given: every slot.
int parse_np(const std::string& text) {
  if (text.empty()) return 0;
  auto np = whole_number(text);
  if (!np) {
    std::string hint = decimal_hint(text, 0, std::numeric_limits<int>::max());
    throw InvalidArgument("-np: '" + text + "' is not a whole number" +
                          (hint.empty() ? "" : " (" + hint + ")"));
  }
  if (*np < 1) throw InvalidArgument("-np must be at least 1, got " + text);
  return *np;
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

OutputOptions output_options(const Options& o) {
  OutputOptions output{.directory = o.output_directory, .timestamps = o.prefix_timestamp};
  if (!o.console_ranks.empty()) output.console = parse_rank_list(o.console_ranks);
  return output;
}

JobEventsOptions events_options(const Options& o) {
  return {.event_log = o.event_log, .metrics_file = o.metrics_file, .job_id = new_job_id()};
}

// COHORT_TIMELINE as the workers get it, checked here where rank 0 may run on this host.
void check_files_here(const Options& o, const std::vector<HostSlots>& rank0_hosts) {
  if (rank0_may_run_here(rank0_hosts))
    check_worker_files(o.tunables.count("--timeline-filename") > 0);
}

int run_static(const Options& o) {
  HostManager hosts = job_hosts(o);
  check_files_here(o, {hosts.hosts().front()});  // the first slot is rank 0's
  return run_static_job(std::move(hosts), {.np = parse_np(o.np),
                                           .command = o.command,
                                           .term_grace = millis(o.term_grace_seconds),
                                           .start_timeout = millis(o.start_timeout_seconds),
                                           .launch = launch_options(o),
                                           .output = output_options(o),
                                           .events = events_options(o)});
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
                      .launch = launch_options(o),
                      .output = output_options(o),
                      .events = events_options(o)};
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
    throw InvalidArgument(
        "--rdzv-backend etcd needs --rdzv-endpoints (or PET_RDZV_ENDPOINT) and --rdzv-id (or "
        "PET_RDZV_ID)");
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
                 .last_call = millis(o.rdzv_last_call_seconds),
                 .start_timeout = millis(o.start_timeout_seconds),
                 .term_grace = millis(o.term_grace_seconds),
                 .output = output_options(o),
                 .events = {.event_log = o.event_log, .metrics_file = o.metrics_file}};
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
  if (o.rdzv_backend == "etcd") {
    AgentOptions agent = agent_options(o, app);
    check_files_here(o, {{"localhost"}});  // an agent's workers run on its own host
    return run_agent(agent);
  }
  for (const auto& flag : kAgentFlags) {
    if (app.count(flag) > 0) throw InvalidArgument(flag + " needs --rdzv-backend etcd");
  }
  check_mode(o, app);
  if (app.count("--host-discovery-script") == 0 && app.count("--min-np") == 0) {
    return run_static(o);
  }
  ElasticJobOptions elastic = elastic_options(o, app);
  // With a discovery script the hosts are not known yet: rank 0 checks the path in init().
  check_files_here(o, elastic.fixed_hosts);
  return run_elastic_job(elastic);
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

// The Kubernetes operators' variables (PET_*, OMPI_MCA_*) into the options the flags left unset.
void apply_operator_conventions(Options& o, const CLI::App& app) {
  std::set<std::string> given;
  for (const auto& flag : kOperatorFlags) {
    if (app.count(flag) > 0) given.insert(flag);
  }
  OperatorEnvResult result = apply_operator_env(operator_env_from_process(), given, o);
  for (const auto& warning : result.warnings) log::warning(warning);
  for (const auto& line : result.ignored) log::info(line);
  for (const auto& name : result.unset) ::unsetenv(name.c_str());
}

// -x, the tunables' flags and --log-level, in that order (a flag wins over -x): the workers'
// environment, before anything starts.
void apply_environment(Options& o) {
  for (const auto& spec : o.exports) o.launch.exports.push_back(apply_export(spec));
  apply_tunables(o.tunables);
  apply_log_level(o.log_level);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string program;
  CLI::App app("cohortrun: start and supervise a Cohort job");
  add_options(app, o, program);
  std::vector<std::string> args;
  try {
    args = normalized_args(app, argc, argv);
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
    apply_operator_conventions(o, app);
    apply_environment(o);
    return run(o, app);
  } catch (const std::exception& e) {
    std::cerr << "cohortrun: " << e.what() << std::endl;
    return 2;
  }
}
