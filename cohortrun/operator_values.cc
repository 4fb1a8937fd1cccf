#include "cohortrun/operator_values.h"

#include <arpa/inet.h>

#include <limits>
#include <set>
#include <vector>

#include "agent/agent_cli.h"
#include "base/decimal.h"
#include "base/env_value.h"
#include "base/host_port.h"
#include "cohort/errors.h"
#include "launcher/hosts.h"
#include "rendezvous/etcd_client.h"

namespace cohort::discovery::operator_values {
namespace {

constexpr int kMostInt = std::numeric_limits<int>::max();
// torchrun's etcd rendezvous uses etcd's client port where the endpoint names none.
constexpr const char* kEtcdPort = "2379";

std::string hinted(const std::string& hint, const std::string& otherwise) {
  return hint.empty() ? otherwise : " (" + hint + ")";
}

std::string backend(const std::string& value, const std::string& who) {
  for (const char* known : {"etcd", "etcd-v2", "c10d", "static"}) {
    if (value == known) return value;
  }
  throw InvalidArgument(who + " is not etcd, etcd-v2, c10d or static (torchrun's backends)");
}

// torchrun's static rendezvous address, which Cohort does not use: a name or an IP address
// (IPv6 too: it is only checked, never connected to).
std::string host(const std::string& value, const std::string& who) {
  in6_addr v6{};
  if (net::valid_host_name(value) || ::inet_pton(AF_INET6, value.c_str(), &v6) == 1) {
    return value;
  }
  throw InvalidArgument(who + " is not a host name or an IP address");
}

// torchrun's --rdzv-conf: KEY=VALUE pairs, comma-separated, neither side empty; empty as a whole.
std::string rdzv_conf(const std::string& value, const std::string& who) {
  std::string_view rest = trim(value);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view pair = rest.substr(0, comma);
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos || trim(pair.substr(0, eq)).empty() ||
        trim(pair.substr(eq + 1)).empty()) {
      throw InvalidArgument(who + " is not KEY=VALUE,... (torchrun's rendezvous configuration): '" +
                            std::string(pair) + "'");
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return value;
}

// torchrun's --standalone: 1 or 0; the training operator sets it empty for "on".
std::string standalone(const std::string& value, const std::string& who) {
  if (value.empty() || value == "0" || value == "1") return value;
  throw InvalidArgument(who + " is not 0, 1 or empty (torchrun's --standalone)");
}

std::string monitor_interval(const std::string& value, const std::string& who) {
  try {
    env::parse_duration("PET_MONITOR_INTERVAL", value, env::kSecondsInMicroseconds);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(who + ": " + e.what());
  }
  return value;
}

std::string start_method(const std::string& value, const std::string& who) {
  if (value == "spawn" || value == "fork" || value == "forkserver") return value;
  throw InvalidArgument(who + " is not spawn, fork or forkserver (torchrun's start methods)");
}

// Open MPI's default hostfile: a path, read only where it is used.
std::string path(const std::string& value, const std::string& who) {
  if (!value.empty()) return value;
  throw InvalidArgument(who + " is empty: expected the path of a hostfile");
}

struct Check {
  const char* variable;
  Canon canon;
  bool pod = false;  // the pod's own: checked only when a PET_ variable is set
};

const std::vector<Check>& checks() {
  static const std::vector<Check> all = {
      {"PET_RDZV_BACKEND", backend},
      {"PET_RDZV_ENDPOINT", endpoints},
      {"PET_RDZV_ID", job_id},
      {"PET_NNODES", nnodes},
      {"PET_NPROC_PER_NODE", kProcPerNode},
      // PET_NODE_RANK: checked by either mode, against the MAX it knows (operator_env.cc).
      {"PET_MASTER_ADDR", host},
      {"PET_MASTER_PORT", port},
      {"PET_MAX_RESTARTS", count(0, kMostInt)},
      {"PET_RDZV_CONF", rdzv_conf},
      {"PET_STANDALONE", standalone},
      {"PET_MONITOR_INTERVAL", monitor_interval},
      {"PET_START_METHOD", start_method},
      {"MASTER_ADDR", host, true},
      {"MASTER_PORT", port, true},
      {"WORLD_SIZE", count(1, kMostInt), true},
      {"RANK", count(0, kMostInt), true},
      {"OMPI_MCA_orte_set_default_slots", count(1, 4096)},
      {"OMPI_MCA_orte_default_hostfile", path},
  };
  return all;
}

}  // namespace

std::string nnodes(const std::string& value, const std::string& who) {
  auto [lo, hi] = parse_nnodes(value, who);
  return std::to_string(lo) + ":" + std::to_string(hi);
}

Canon count(int lo, int hi, const std::string& otherwise) {
  return [=](const std::string& value, const std::string& who) {
    if (auto n = parse_decimal<int>(value, lo, hi)) return std::to_string(*n);
    throw InvalidArgument(who + " is not " + decimal_range(lo, hi) +
                          hinted(decimal_hint(value, lo, hi), otherwise));
  };
}

Canon node_rank(int nodes) {
  return [nodes](const std::string& value, const std::string& who) {
    if (auto rank = parse_decimal<int>(value, 0, nodes - 1)) return std::to_string(*rank);
    std::string hint = decimal_hint(value, 0, nodes - 1);
    throw InvalidArgument(who + " is not a node rank from 0 to " + std::to_string(nodes - 1) +
                          " (" + (hint.empty() ? "" : hint + "; ") + "PET_NNODES' MAX is " +
                          std::to_string(nodes) + ")");
  };
}

const Canon kProcPerNode = [](const std::string& value, const std::string& who) {
  bool torchrun_word = value == "auto" || value == "cpu" || value == "gpu" || value == "xpu";
  return count(1, 4096,
               torchrun_word ? " (torchrun's auto, cpu, gpu and xpu count this machine's "
                               "processors, which cohortrun does not: give the number of workers, "
                               "e.g. nprocPerNode: \"2\" in a PyTorchJob, whose default is auto)"
                             : "")(value, who);
};

std::string port(const std::string& value, const std::string& who) {
  if (auto p = net::parse_port(value)) return std::to_string(*p);
  throw InvalidArgument(who + " is not " + decimal_range(net::kLowestPort, net::kHighestPort) +
                        hinted(decimal_hint(value, net::kLowestPort, net::kHighestPort), ""));
}

std::string endpoints(const std::string& value, const std::string& who) {
  std::string urls;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    std::string one{trim(std::string_view(value).substr(start, comma - start))};
    if (!one.empty() && one.find("://") == std::string::npos) {
      one = "http://" + one +
            (one.find(':') == std::string::npos ? std::string(":") + kEtcdPort : "");
    }
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

std::string job_id(const std::string& value, const std::string& who) {
  if (!valid_job_id(value))
    throw InvalidArgument(who + " is not a job id (letters, digits, . _ -)");
  return value;
}

void check_all(const std::map<std::string, std::string>& env, bool torchrun) {
  for (const auto& check : checks()) {
    auto it = env.find(check.variable);
    if (it == env.end() || (check.pod && !torchrun)) continue;
    check.canon(it->second, it->first + "='" + it->second + "'");
  }
}

}  // namespace cohort::discovery::operator_values
