#include "cohortrun/operator_env.h"

#include <cstdlib>
#include <functional>
#include <optional>

#include "agent/agent_cli.h"
#include "agent/agent_records.h"
#include "base/decimal.h"
#include "cohort/errors.h"
#include "launcher/hosts.h"
#include "rendezvous/etcd_client.h"

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

// A value's canonical text, so that "2" and "2:2" agree; throws InvalidArgument starting with
// `who` (the variable and its value, or the flag) when the value is bad.
using Canon = std::function<std::string(const std::string& value, const std::string& who)>;

struct Context {
  const OperatorEnv& env;
  const std::set<std::string>& given;
  std::optional<std::string> get(const std::string& name) const {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional(it->second);
  }
  // Fills `option` from `variable` unless `flag` was given, and then they must agree.
  void fill(const std::string& variable, const std::string& flag, std::string& option,
            const Canon& canon) const {
    auto value = get(variable);
    if (!value) return;
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
  void fill(const std::string& variable, const std::string& flag, int& option,
            const Canon& canon) const {
    std::string text = std::to_string(option);
    fill(variable, flag, text, canon);
    option = std::stoi(text);
  }
};

std::string nnodes_canon(const std::string& value, const std::string& who) {
  try {
    auto [lo, hi] = parse_nnodes(value);
    return std::to_string(lo) + ":" + std::to_string(hi);
  } catch (const InvalidArgument&) {
    throw InvalidArgument(who + " is not N or MIN:MAX (whole numbers >= 1, MIN <= MAX)");
  }
}

Canon count_canon(int most, const std::string& hint) {
  return [most, hint](const std::string& value, const std::string& who) {
    auto n = whole_number(value);
    if (!n || *n < 1 || *n > most) {
      throw InvalidArgument(who + " is not a whole number from 1 to " + std::to_string(most) +
                            hint);
    }
    return std::to_string(*n);
  };
}

// torchrun's endpoint is host:port (etcd's protocol defaults to http); cohortrun's are URLs.
std::string endpoints_canon(const std::string& value, const std::string& who) {
  std::string urls;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    std::string one{trim(std::string_view(value).substr(start, comma - start))};
    if (!one.empty() && one.find("://") == std::string::npos) one = "http://" + one;
    urls += (urls.empty() ? "" : ",") + one;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  try {
    rendezvous::parse_etcd_endpoints(urls);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(who + " is not etcd's host:port or URLs: " + e.what());
  }
  return urls;
}

std::string id_canon(const std::string& value, const std::string& who) {
  bool ok = !value.empty() && value.find_first_not_of(
                                  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                  "QRSTUVWXYZ0123456789._-") == std::string::npos;
  if (!ok) throw InvalidArgument(who + " is not a job id (letters, digits, . _ -)");
  return value;
}

// PET_NODE_RANK names the node: unique and stable for each pod, as --node-name must be.
Canon rank_canon(int nodes) {
  return [nodes](const std::string& value, const std::string& who) {
    auto rank = whole_number(value);
    if (!rank || *rank >= nodes) {
      throw InvalidArgument(who + " is not a node rank from 0 to " + std::to_string(nodes - 1) +
                            " (PET_NNODES' MAX is " + std::to_string(nodes) + ")");
    }
    return std::to_string(*rank);
  };
}

const Canon kPortCanon = count_canon(65535, "");
const Canon kProcCanon =
    count_canon(4096, " (torchrun's auto, cpu and gpu are not supported: give a number)");

void fill_agent(const Context& c, CohortrunOptions& o) {
  c.fill("PET_NNODES", "--nnodes", o.nnodes, nnodes_canon);
  c.fill("PET_NPROC_PER_NODE", "--nproc-per-node", o.nproc_per_node, kProcCanon);
  c.fill("PET_RDZV_ENDPOINT", "--rdzv-endpoints", o.rdzv_endpoints, endpoints_canon);
  c.fill("PET_RDZV_ID", "--rdzv-id", o.rdzv_id, id_canon);
  int nodes = parse_nnodes(o.nnodes).second;  // checked by now when it came from PET_NNODES
  c.fill("PET_NODE_RANK", "--node-name", o.node_name, rank_canon(nodes));
}

// torchrun's static and c10d rendezvous meet at a TCP store on one of the nodes, which Cohort
// does not have: only one node (all of the job on this pod) can be served, by the one launcher.
void fill_single_node(const Context& c, const std::string& backend, CohortrunOptions& o) {
  if (auto nnodes = c.get("PET_NNODES")) {
    if (nnodes_canon(*nnodes, "PET_NNODES='" + *nnodes + "'") != "1:1") {
      throw InvalidArgument(
          "PET_NNODES='" + *nnodes + "' with " +
          (backend.empty() ? "no PET_RDZV_BACKEND (torchrun's static rendezvous)"
                           : "PET_RDZV_BACKEND='" + backend + "'") +
          ": Cohort's nodes meet only in etcd; set PET_RDZV_BACKEND=etcd and PET_RDZV_ENDPOINT "
          "to etcd's host:port (docs/kubernetes.md), or run one launcher with -H or --hostfile");
    }
  }
  if (auto rank = c.get("PET_NODE_RANK")) rank_canon(1)(*rank, "PET_NODE_RANK='" + *rank + "'");
  for (const char* flag : {"--hosts", "--hostfile", "--host-discovery-script", "--min-np"}) {
    if (c.given.count(flag) > 0) return;  // not one node's workers: -np stays as given
  }
  c.fill("PET_NPROC_PER_NODE", "--np", o.np, kProcCanon);
}

void apply_torchrun(const Context& c, CohortrunOptions& o, OperatorEnvResult& result) {
  std::string backend = c.get("PET_RDZV_BACKEND").value_or("");
  if (!backend.empty() && backend != "etcd" && backend != "etcd-v2" && backend != "c10d" &&
      backend != "static") {
    throw InvalidArgument("PET_RDZV_BACKEND='" + backend +
                          "' is not etcd, etcd-v2, c10d or static (torchrun's backends)");
  }
  std::string mode = backend.rfind("etcd", 0) == 0 ? "etcd" : backend.empty() ? "" : "builtin";
  if (c.given.count("--rdzv-backend") > 0 && !mode.empty() && mode != o.rdzv_backend) {
    throw InvalidArgument("PET_RDZV_BACKEND='" + backend + "' disagrees with --rdzv-backend '" +
                          o.rdzv_backend + "': give the value once, or the same in both");
  }
  if (c.given.count("--rdzv-backend") == 0 && mode == "etcd") o.rdzv_backend = "etcd";
  if (auto port = c.get("PET_MASTER_PORT")) kPortCanon(*port, "PET_MASTER_PORT='" + *port + "'");
  if (o.rdzv_backend == "etcd") {
    fill_agent(c, o);
  } else {
    fill_single_node(c, backend, o);
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
void apply_mpi_operator(const Context& c, CohortrunOptions& o) {
  c.fill("OMPI_MCA_orte_set_default_slots", "--slots-per-host", o.slots_per_host,
         count_canon(4096, ""));
  auto hostfile = c.get("OMPI_MCA_orte_default_hostfile");
  if (!hostfile || o.rdzv_backend == "etcd") return;
  for (const char* flag : {"--hosts", "--hostfile", "--host-discovery-script"}) {
    if (c.given.count(flag) > 0) return;
  }
  o.hostfile = *hostfile;
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
  Context c{env, given};
  CohortrunOptions next = o;
  OperatorEnvResult result;
  bool torchrun = false;
  for (const auto& name : kTorchrunVariables) torchrun = torchrun || c.get(name).has_value();
  if (torchrun) apply_torchrun(c, next, result);
  apply_mpi_operator(c, next);
  o = std::move(next);
  return result;
}

}  // namespace cohort::discovery
