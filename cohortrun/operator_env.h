// The Kubernetes operators' conventions: the environment that the Kubeflow training operator
// (PyTorchJob, Trainer) and the MPI Operator give a pod, read as cohortrun's flags. torchrun reads
// PET_<FLAG> as its --<flag>; cohortrun reads the same variables into the same options its flags
// fill, and the MPI Operator's OMPI_MCA_* settings as mpirun would. One place, one rule: a
// variable fills an option whose flag was not given; a flag given with another value is an error
// naming both (docs/kubernetes.md).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "cohortrun/cohortrun_options.h"

namespace cohort::discovery {

// Variable name -> value; only the names in kOperatorVariables matter.
using OperatorEnv = std::map<std::string, std::string>;

// Every variable apply_operator_env reads or reports.
extern const std::vector<std::string> kOperatorVariables;

// The flags that one of kOperatorVariables stands for, or that decide whether one applies.
extern const std::vector<std::string> kOperatorFlags;

// The values of kOperatorVariables in this process's environment (unset ones left out).
OperatorEnv operator_env_from_process();

struct OperatorEnvResult {
  std::vector<std::string> warnings;  // variables that are set but mean nothing to cohortrun
  std::vector<std::string> unset;     // the pod's own variables, not a worker's: remove them
  std::vector<std::string> ignored;   // valid, but not read in the mode chosen (logged at info)
};

// Fills `o` from `env` where `given` (the long flags on the command line, e.g. "--nnodes") does
// not name the flag. Throws InvalidArgument naming the variable and its value for a bad value of
// any variable that is set, whether the mode chosen reads it or not (cohortrun/operator_values.h),
// naming the variable and the flag when both are given and disagree, and naming the variable for
// what Cohort cannot serve (torchrun's c10d or static rendezvous across nodes). Changes `o` only
// when it succeeds.
OperatorEnvResult apply_operator_env(const OperatorEnv& env, const std::set<std::string>& given,
                                     CohortrunOptions& o);

}  // namespace cohort::discovery
