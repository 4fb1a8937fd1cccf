#include "launcher/worker_exports.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "base/launch_env.h"
#include "cohort/errors.h"

extern char** environ;

namespace cohort::discovery {
namespace {

// Whole families: Cohort's own settings, and those of the libraries a training program loads.
constexpr std::array<std::string_view, 3> kDefaultPrefixes = {"COHORT_", "NCCL_", "OMP_"};
// Where programs, libraries and Python modules are found, as horovodrun passes them on: a job
// started from a virtual environment or a build tree finds the same on every host.
constexpr std::array<std::string_view, 6> kDefaultNames = {
    "PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONUNBUFFERED", "VIRTUAL_ENV", "MKL_NUM_THREADS"};

// Set by cohortrun for each worker: -x cannot give them (the worker's own value would win).
constexpr std::array<const char*, 17> kSetPerWorker = {
    env::kRank,           env::kSize,           env::kLocalRank,     env::kLocalSize,
    env::kCrossRank,      env::kCrossSize,      env::kHostname,      env::kNetworkInterface,
    env::kRendezvousAddr, env::kRendezvousPort, env::kEtcdEndpoints, env::kEtcdPrefix,
    env::kEtcdCaFile,     env::kEtcdCertFile,   env::kEtcdKeyFile,   env::kSecret,
    env::kWorkerId};
// Horovod's names of the placement, refused likewise in every mode: a static worker gets them,
// and an elastic one has none, as a value fixed for the whole job would be wrong after a reset.
constexpr std::array<const char*, 6> kHorovodPerWorker = {
    env::kHorovodRank,      env::kHorovodSize,      env::kHorovodLocalRank,
    env::kHorovodLocalSize, env::kHorovodCrossRank, env::kHorovodCrossSize};

bool is_variable_name(std::string_view name) {
  auto word = [](char c) { return c == '_' || std::isalnum(static_cast<unsigned char>(c)); };
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), word);
}

}  // namespace

std::string apply_export(const std::string& spec) {
  size_t eq = spec.find('=');
  std::string name = spec.substr(0, eq);
  if (!is_variable_name(name)) {
    throw InvalidArgument("-x: '" + name + "' is not an environment variable name");
  }
  auto set_per_worker = [&](const auto& names) {
    return std::any_of(names.begin(), names.end(), [&](const char* own) { return name == own; });
  };
  if (set_per_worker(kSetPerWorker) || set_per_worker(kHorovodPerWorker)) {
    throw InvalidArgument("-x: cohortrun sets " + name + " for each worker itself");
  }
  if (eq != std::string::npos) {
    ::setenv(name.c_str(), spec.c_str() + eq + 1, 1);
  } else if (std::getenv(name.c_str()) == nullptr) {
    throw InvalidArgument("-x: " + name +
                          " is not set in cohortrun's environment (give -x NAME=VALUE)");
  }
  return name;
}

bool exported_by_default(std::string_view name) {
  return std::any_of(kDefaultPrefixes.begin(), kDefaultPrefixes.end(),
                     [&](std::string_view p) { return name.starts_with(p); }) ||
         std::find(kDefaultNames.begin(), kDefaultNames.end(), name) != kDefaultNames.end();
}

std::map<std::string, std::string> exported_environment(const std::vector<std::string>& exports) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr) continue;
    std::string name(*e, static_cast<size_t>(eq - *e));
    bool named = std::find(exports.begin(), exports.end(), name) != exports.end();
    if (named || exported_by_default(name)) vars[name] = eq + 1;
  }
  return vars;
}

}  // namespace cohort::discovery
