// Which of cohortrun's environment variables its workers on other hosts receive: a default set
// (worker_exports.cc's table, documented in docs/cohortrun.md) and the names of -x, as
// mpirun -x. Workers on this machine inherit cohortrun's whole environment, -x's values included.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cohort::discovery {

// Applies one -x: "NAME=VALUE" sets NAME in this process's environment (so every worker, local
// or remote, gets it); "NAME" passes on the value NAME has here. Returns NAME. Throws
// InvalidArgument for a NAME that is not a variable name, is not set (without a value), or is
// one that cohortrun sets for each worker itself (COHORT_RANK, ...).
std::string apply_export(const std::string& spec);

// Whether `name` is in the default set that reaches remote workers without -x.
bool exported_by_default(std::string_view name);

// The variables of this process's environment that a remote worker receives: the default set and
// the names in `exports`.
std::map<std::string, std::string> exported_environment(const std::vector<std::string>& exports);

}  // namespace cohort::discovery
