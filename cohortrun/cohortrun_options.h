// cohortrun's command line: every flag, its default and its check (add_options), and the
// argument clean-up CLI11 needs first (normalized_args). cohortrun_main.cc turns the parsed
// Options into a job.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "launcher/worker_launcher.h"

namespace cohort::discovery {

struct CohortrunOptions {
  std::string np;
  std::string hosts;
  std::string hostfile;
  double term_grace_seconds = 5;
  double start_timeout_seconds = 120;
  bool verbose = false;
  std::vector<std::string> exports;  // -x NAME or NAME=VALUE
  std::string output_directory;      // --output-filename
  bool prefix_timestamp = false;
  std::string console_ranks;
  std::map<std::string, std::string> tunables;  // job_tunables.h: flag -> value as typed
  std::string event_log;                        // --event-log
  std::string metrics_file;                     // --metrics-file
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
  double rdzv_last_call_seconds = 30;
  std::string nnodes = "1";
  int nproc_per_node = 1;
  std::string node_name;
  std::string node_address;
};

// Flags that only mean something with a discovery script, and with any elastic job.
extern const std::vector<std::string> kDiscoveryFlags;
extern const std::vector<std::string> kElasticFlags;
// Flags of agent mode only, and the flags it refuses (the agents find each other through etcd).
extern const std::vector<std::string> kAgentFlags;
extern const std::vector<std::string> kNotAgentFlags;

// Declares every flag of `app`, storing into `o`; the worker program goes to `program`.
void add_options(CLI::App& app, CohortrunOptions& o, std::string& program);

// argv for app.parse(), with "-np" spelled "--np" (CLI11 accepts only one-character short
// options). An option `app` does not know, before the program, is an InvalidArgument: CLI11 would
// take it for the start of the worker command.
std::vector<std::string> normalized_args(const CLI::App& app, int argc, char** argv);

// The worker command: the program, then everything after it untouched, except the "--" that
// CLI11 hands back when it separated cohortrun's options from the program.
std::vector<std::string> worker_command(const std::string& program, std::vector<std::string> rest,
                                        int argc, char** argv);

}  // namespace cohort::discovery
