#include "cohortrun/operator_env.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "agent/agent_cli.h"
#include "base/decimal.h"
#include "cohort/errors.h"
#include "cohortrun/operator_values.h"

namespace cohort::discovery {

namespace {

// torchrun's flags that the training operator may set and cohortrun has no counterpart for.
const std::vector<std::string> kUnreadTorchrun = {"PET_MAX_RESTARTS", "PET_RDZV_CONF",
                                                  "PET_STANDALONE", "PET_MONITOR_INTERVAL",
                                                  "PET_START_METHOD"};
// Set by the training operator for a pod, not for a worker (torchrun does not read them either).
const std::vector<std::string> kPodVariables = {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"};
// Set when the pod follows torchrun's conventions at all.
const std::vector<std::string> kTorchrunVariables = {
    "PET_NNODES",        "PET_NPROC_PER_NODE", "PET_NODE_RANK",   "PET_RDZV_BACKEND",
    "PET_RDZV_ENDPOINT", "PET_RDZV_ID",        "PET_MASTER_ADDR", "PET_MASTER_PORT"};

using operator_values::Canon;

struct Context {
  const OperatorEnv& env;
  const std::set<std::string>& given;
  std::set<std::string> read;  // the variables the chosen mode takes a value from
  std::optional<std::string> get(const std::string& name) const {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional(it->second);
  }
  // Fills `option` from `variable` unless `flag` was given, and then they must agree.
  void fill(const std::string& variable, const std::string& flag, std::string& option,
            const Canon& canon) {
    auto value = get(variable);
    if (!value) return;
    read.insert(variable);
    std::string from_env = canon(*value, variable + "='" + *value + "'");
    if (given.count(flag) == 0) {
      option = from_env;
      return;
    }
    std::string from_flag = option;
    try {
      from_flag = canon(option, flag);
    } catch (const InvalidArgument&) {  // the flag's own check names it
    }
    if (from_flag != from_env) {
      throw InvalidArgument(variable + "='" + *value + "' disagrees with " + flag + " '" + option +
                            "': give the value once, or the same in both");
    }
  }
  void fill(const std::string& variable, const std::string& flag, int& option, const Canon& canon) {
    std::string text = std::to_string(option);
    fill(variable, flag, text, canon);
    option = *parse_decimal<int>(text);  // canonical by now
  }
};

void fill_agent(Context& c, CohortrunOptions& o) {
  c.fill("PET_NNODES", "--nnodes", o.nnodes, operator_values::nnodes);
  c.fill("PET_NPROC_PER_NODE", "--nproc-per-node", o.nproc_per_node, operator_values::kProcPerNode);
  c.fill("PET_RDZV_ENDPOINT", "--rdzv-endpoints", o.rdzv_endpoints, operator_values::endpoints);
  c.fill("PET_RDZV_ID", "--rdzv-id", o.rdzv_id, operator_values::job_id);
  int nodes = parse_nnodes(o.nnodes).second;  // checked by now when it came from PET_NNODES
  // PET_NODE_RANK names the node: unique and stable for each pod, as --node-name must be.
  c.fill("PET_NODE_RANK", "--node-name", o.node_name, operator_values::node_rank(nodes));
}

// torchrun's static and c10d rendezvous meet at a TCP store on one of the nodes, which Cohort
// does not have: only one node (all of the job on this pod) can be served, by the one launcher.
void fill_single_node(Context& c, const std::string& backend, CohortrunOptions& o) {
  if (auto nnodes = c.get("PET_NNODES")) {
    c.read.insert("PET_NNODES");
    if (operator_values::nnodes(*nnodes, "PET_NNODES='" + *nnodes + "'") != "1:1") {
      throw InvalidArgument(
          "PET_NNODES='" + *nnodes + "' with " +
          (backend.empty() ? "no PET_RDZV_BACKEND (torchrun's static rendezvous)"
                           : "PET_RDZV_BACKEND='" + backend + "'") +
          ": Cohort's nodes meet only in etcd; set PET_RDZV_BACKEND=etcd and PET_RDZV_ENDPOINT "
          "to etcd's host:port (docs/kubernetes.md), or run one launcher with -H or --hostfile");
    }
  }
  if (auto rank = c.get("PET_NODE_RANK")) {
    c.read.insert("PET_NODE_RANK");
    operator_values::node_rank(1)(*rank, "PET_NODE_RANK='" + *rank + "'");
  }
  for (const char* flag : {"--hosts", "--hostfile", "--host-discovery-script", "--min-np"}) {
    if (c.given.count(flag) > 0) return;  // not one node's workers: -np stays as given
  }
  c.fill("PET_NPROC_PER_NODE", "--np", o.np, operator_values::kProcPerNode);
}

void apply_torchrun(Context& c, CohortrunOptions& o, OperatorEnvResult& result) {
  std::optional<std::string> backend = c.get("PET_RDZV_BACKEND");
  if (backend) c.read.insert("PET_RDZV_BACKEND");
  std::string mode = !backend ? "" : backend->rfind("etcd", 0) == 0 ? "etcd" : "builtin";
  if (c.given.count("--rdzv-backend") > 0 && !mode.empty() && mode != o.rdzv_backend) {
    throw InvalidArgument("PET_RDZV_BACKEND='" + *backend + "' disagrees with --rdzv-backend '" +
                          o.rdzv_backend + "': give the value once, or the same in both");
  }
  if (c.given.count("--rdzv-backend") == 0 && mode == "etcd") o.rdzv_backend = "etcd";
  if (o.rdzv_backend == "etcd") {
    fill_agent(c, o);
  } else {
    fill_single_node(c, backend.value_or(""), o);
  }
  for (const auto& name : kPodVariables) {
    if (c.get(name)) result.unset.push_back(name);
  }
  for (const auto& name : kUnreadTorchrun) {
    if (c.get(name)) {
      result.warnings.push_back(name +
                                " is set but cohortrun does not read it (torchrun's flag "
                                "has no counterpart here; see docs/kubernetes.md)");
    }
  }
}

// The MPI Operator's launcher: slotsPerWorker, and the hostfile mpirun would use by default.
void apply_mpi_operator(Context& c, CohortrunOptions& o) {
  c.fill("OMPI_MCA_orte_set_default_slots", "--slots-per-host", o.slots_per_host,
         operator_values::count(1, 4096));
  if (o.rdzv_backend == "etcd" || c.given.count("--host-discovery-script") == 0) {
    c.read.erase("OMPI_MCA_orte_set_default_slots");  // only a discovered host's slots use it
  }
  auto hostfile = c.get("OMPI_MCA_orte_default_hostfile");
  if (!hostfile || o.rdzv_backend == "etcd") return;
  for (const char* flag : {"--hosts", "--hostfile", "--host-discovery-script"}) {
    if (c.given.count(flag) > 0) return;
  }
  c.read.insert("OMPI_MCA_orte_default_hostfile");
  o.hostfile = *hostfile;
}

// The variables that are set, valid and not read by the mode chosen (the pod's own and torchrun's
// flags without a counterpart have reports of their own).
std::vector<std::string> ignored(const Context& c, const CohortrunOptions& o) {
  std::string mode = o.rdzv_backend == "etcd" ? "agent mode (--rdzv-backend etcd)"
                                              : "the one launcher (--rdzv-backend builtin)";
  std::vector<std::string> out;
  for (const auto& name : kOperatorVariables) {
    auto value = c.get(name);
    bool reported = std::count(kUnreadTorchrun.begin(), kUnreadTorchrun.end(), name) +
                        std::count(kPodVariables.begin(), kPodVariables.end(), name) >
                    0;
    if (!value || reported || c.read.count(name) > 0) continue;
    out.push_back(name + "='" + *value + "' is valid but not read by " + mode +
                  " (docs/kubernetes.md)");
  }
  return out;
}

}  // namespace

const std::vector<std::string> kOperatorVariables = [] {
  std::vector<std::string> all = kTorchrunVariables;
  for (const auto* list : {&kUnreadTorchrun, &kPodVariables}) {
    all.insert(all.end(), list->begin(), list->end());
  }
  all.push_back("OMPI_MCA_orte_set_default_slots");
  all.push_back("OMPI_MCA_orte_default_hostfile");
  return all;
}();

const std::vector<std::string> kOperatorFlags = {"--rdzv-backend",
                                                 "--nnodes",
                                                 "--nproc-per-node",
                                                 "--rdzv-endpoints",
                                                 "--rdzv-id",
                                                 "--node-name",
                                                 "--np",
                                                 "--hosts",
                                                 "--hostfile",
                                                 "--min-np",
                                                 "--host-discovery-script",
                                                 "--slots-per-host"};

OperatorEnv operator_env_from_process() {
  OperatorEnv env;
  for (const auto& name : kOperatorVariables) {
    if (const char* value = std::getenv(name.c_str())) env[name] = value;
  }
  return env;
}

OperatorEnvResult apply_operator_env(const OperatorEnv& env, const std::set<std::string>& given,
                                     CohortrunOptions& o) {
  Context c{env, given, {}};
  CohortrunOptions next = o;
  OperatorEnvResult result;
  bool torchrun = false;
  for (const auto& name : kTorchrunVariables) torchrun = torchrun || c.get(name).has_value();
  operator_values::check_all(env,
                             torchrun);  // every variable set, whether the mode reads it or not
  if (torchrun) apply_torchrun(c, next, result);
  apply_mpi_operator(c, next);
  result.ignored = ignored(c, next);
  o = std::move(next);
  return result;
}

}  // namespace cohort::discovery
