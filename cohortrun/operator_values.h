// The values of the Kubernetes operators' variables (cohortrun/operator_env.h), each checked on its
// own and written in one canonical text, so that a variable and a flag can be compared ("2" and
// "2:2" agree). Every variable that is set is checked, whether or not the job's mode reads it: a
// bad value is an error naming the variable and the value, and nothing starts (docs/kubernetes.md).
#pragma once

#include <functional>
#include <map>
#include <string>

namespace cohort::discovery::operator_values {

// A value's canonical text; throws InvalidArgument starting with `who` (the variable and its value,
// "PET_NNODES='x'", or the flag) when the value is bad.
using Canon = std::function<std::string(const std::string& value, const std::string& who)>;

// N or MIN:MAX nodes, as "MIN:MAX".
std::string nnodes(const std::string& value, const std::string& who);
// A whole number from `lo` to `hi`; `otherwise` follows the refusal where no respelling helps.
Canon count(int lo, int hi, const std::string& otherwise = "");
// A node's rank, 0 to `nodes` - 1.
Canon node_rank(int nodes);
// PET_NPROC_PER_NODE: a number of workers (torchrun's auto, cpu, gpu and xpu are refused).
extern const Canon kProcPerNode;
// A TCP port, 1 to 65535.
std::string port(const std::string& value, const std::string& who);
// torchrun's host:port (etcd's port 2379 when it has none) or http(s):// URLs, comma-separated,
// as the URLs cohortrun's --rdzv-endpoints takes.
std::string endpoints(const std::string& value, const std::string& who);
// A job id.
std::string job_id(const std::string& value, const std::string& who);

// Checks every variable of `env` (name -> value) that is one of kOperatorVariables; the pod's own
// (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK) only when `torchrun` (a PET_ variable is set:
// otherwise they are someone else's). Throws InvalidArgument for the first bad one.
void check_all(const std::map<std::string, std::string>& env, bool torchrun);

}  // namespace cohort::discovery::operator_values
