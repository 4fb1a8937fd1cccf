// cohortrun's tunable flags (cohortrun/job_tunables.h) against the workers' own table of settings
// (core/config_table.h): every flag sets a variable the workers read, and accepts exactly the
// values the workers accept, so a value cohortrun lets through never fails a worker at init().
#include "cohortrun/job_tunables.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>

#include "cohort/errors.h"
#include "core/config_table.h"

using namespace cohort;
using namespace cohort::discovery;

namespace {

const config_table::Setting* setting_named(const std::string& name) {
  for (const auto& s : config_table::settings()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

bool flag_accepts(const JobTunable& t, const std::string& text) {
  try {
    tunable_value(t, text);
    return true;
  } catch (const InvalidArgument&) {
    return false;
  }
}

bool workers_accept(const config_table::Setting& s, const std::string& text) {
  Config config;
  try {
    config_table::apply(s, text, config);
    return true;
  } catch (const InvalidArgument&) {
    return false;
  }
}

}  // namespace

TEST_CASE("job tunables: each flag accepts exactly what the workers accept") {
  const std::vector<std::string> samples = {"0",
                                            "1",
                                            "-1",
                                            "0.0001",
                                            "0.5",
                                            "1e3",
                                            "abc",
                                            "auto",
                                            "gloo",
                                            "mpi",
                                            "yes",
                                            "nan",
                                            "inf",
                                            "1e20",
                                            "4095",
                                            "4096",
                                            "16777216",
                                            "16777217",
                                            "1073741824",
                                            "1073741825",
                                            "1099511627776",
                                            "1099511627777",
                                            "/tmp/timeline.json"};
  for (const auto& t : job_tunables()) {
    CAPTURE(t.flag);
    const config_table::Setting* s = setting_named(t.variable);
    REQUIRE(s != nullptr);
    if (t.kind == JobTunable::Kind::kSwitch) {
      // A switch sets its variable to a value that turns something off or on: 1, or 0 for a
      // switch that forces an automatic setting off (--no-control-leaders).
      CHECK((std::holds_alternative<config_table::Disable>(s->field) ||
             std::holds_alternative<config_table::Enable>(s->field) ||
             std::holds_alternative<config_table::Parsed<Config::Hierarchy>>(s->field)));
      CHECK((tunable_value(t, "") == "1" || tunable_value(t, "") == "0"));
      CHECK(workers_accept(*s, tunable_value(t, "")));
      continue;
    }
    for (const auto& v : samples) {
      CAPTURE(v);
      CHECK(flag_accepts(t, v) == workers_accept(*s, v));
    }
  }
}

TEST_CASE("job tunables: every setting a user tunes per job has a flag") {
  // --log-level is a flag of its own; the fault points (COHORT_FAULT_*) are for tests.
  auto without = [](const std::string& name) {
    return name == "COHORT_LOG_LEVEL" || name.starts_with("COHORT_FAULT_");
  };
  std::set<std::string> flagged;
  for (const auto& t : job_tunables()) flagged.insert(t.variable);
  for (const auto& s : config_table::settings()) {
    CAPTURE(s.name);
    CHECK(flagged.contains(s.name) != without(s.name));
  }
}

TEST_CASE("job tunables: a refused value names the flag and the variable") {
  const JobTunable& cycle =
      *std::find_if(job_tunables().begin(), job_tunables().end(),
                    [](const JobTunable& t) { return std::string(t.flag) == "--cycle-time"; });
  CHECK_THROWS_WITH(tunable_value(cycle, "soon"),
                    "--cycle-time: COHORT_CYCLE_TIME='soon' is invalid: expected a number of "
                    "milliseconds");
}

TEST_CASE("job tunables: --control-leaders and --no-control-leaders force the setting") {
  auto flag = [](const std::string& name) {
    return *std::find_if(job_tunables().begin(), job_tunables().end(),
                         [&](const JobTunable& t) { return name == t.flag; });
  };
  CHECK(tunable_value(flag("--control-leaders"), "") == "1");
  CHECK(tunable_value(flag("--no-control-leaders"), "") == "0");
  ::unsetenv("COHORT_CONTROL_LEADERS");
  CHECK_THROWS_WITH(apply_tunables({{"--control-leaders", "1"}, {"--no-control-leaders", "1"}}),
                    "--control-leaders and --no-control-leaders contradict each other "
                    "(COHORT_CONTROL_LEADERS=1 or 0)");
  CHECK(std::getenv("COHORT_CONTROL_LEADERS") == nullptr);  // nothing exported
  apply_tunables({{"--no-control-leaders", "1"}});
  CHECK(std::string(std::getenv("COHORT_CONTROL_LEADERS")) == "0");
  ::unsetenv("COHORT_CONTROL_LEADERS");
}
