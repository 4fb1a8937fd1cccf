// The COHORT_* settings a user tunes per job, as cohortrun flags that mirror the variables
// (--cycle-time sets COHORT_CYCLE_TIME for every worker, over cohortrun's own environment).
// docs/environment.md says what each setting does; docs/cohortrun.md lists the flags. A value is
// checked here with the parser the workers use (base/env_value.h), so a bad one stops cohortrun
// before anything starts, and the test against core/config_table.h keeps both sides' rules alike.
#pragma once

#include <map>
#include <span>
#include <string>

#include "base/env_value.h"

namespace cohort::discovery {

struct JobTunable {
  enum class Kind { kDuration, kCount, kChoice, kText, kSwitch };
  const char* flag;      // "--cycle-time"
  const char* horovod;   // horovodrun's spelling of the same flag, where it differs; or nullptr
  const char* variable;  // "COHORT_CYCLE_TIME"
  Kind kind;
  env::DurationRule rule{};  // kDuration
  long long lo = 0, hi = 0;  // kCount
  const char* choices = "";  // kChoice: "gloo mpi"
  const char* value = "";    // what --help shows for the value: "MS"
  const char* given = "1";   // kSwitch: the value its variable gets
  const char* help = "";
};

std::span<const JobTunable> job_tunables();

// The value text the flag's variable gets; for a kSwitch flag, its `given` value.
// Throws InvalidArgument naming the flag and the variable when the workers would refuse it.
std::string tunable_value(const JobTunable& tunable, const std::string& text);

// Exports every given flag's variable (`given`: flag -> text, as typed). Throws InvalidArgument
// for the first bad value, or for two flags that give one variable different values
// (--control-leaders with --no-control-leaders), before anything is exported.
void apply_tunables(const std::map<std::string, std::string>& given);

}  // namespace cohort::discovery
