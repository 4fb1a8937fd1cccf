// The runtime's integers (core/config.cc and its table) read by the one decimal grammar
// (base/decimal.h): every spelling the old parsers took that is not the number's own is refused,
// naming the variable and the value; and COHORT_SECRET is hex digits only.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "cohort/errors.h"
#include "core/config.h"

using cohort::Config;

namespace {

Config parse(const std::map<std::string, std::string>& vars) {
  return Config::from([&](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

std::map<std::string, std::string> cohortrun_env(const std::string& name = "",
                                                 const std::string& value = "") {
  std::map<std::string, std::string> vars = {{"COHORT_RANK", "1"},
                                             {"COHORT_SIZE", "4"},
                                             {"COHORT_RENDEZVOUS_ADDR", "127.0.0.1"},
                                             {"COHORT_RENDEZVOUS_PORT", "4000"},
                                             {"COHORT_SECRET", std::string(64, 'a')}};
  if (!name.empty()) vars[name] = value;
  return vars;
}

}  // namespace

TEST_CASE("config numbers: one spelling per number, in every integer variable") {
  struct Row {
    const char* name;
    const char* value;
    const char* message;  // what the error contains
  };
  const Row rows[] = {
      {"COHORT_RANK", "01",
       "COHORT_RANK='01' is invalid: expected a whole number from 0 to 3 "
       "(write 1, without leading zeros)"},
      {"COHORT_SIZE", "+4",
       "COHORT_SIZE='+4' is invalid: expected a whole number from 1 to "
       "1048576 (write 4, without a '+' sign)"},
      {"COHORT_RANK", "-0",
       "COHORT_RANK='-0' is invalid: expected a whole number from 0 to 3 "
       "(write 0, without a sign)"},
      {"COHORT_RENDEZVOUS_PORT", " 4000",
       "COHORT_RENDEZVOUS_PORT=' 4000' is invalid: expected a "
       "whole number from 1 to 65535 (write 4000, without "
       "spaces)"},
      {"COHORT_RENDEZVOUS_PORT", "99999",
       "COHORT_RENDEZVOUS_PORT='99999' is invalid: expected a "
       "whole number from 1 to 65535"},
      {"COHORT_FUSION_THRESHOLD", "0x10", "COHORT_FUSION_THRESHOLD='0x10' is invalid"},
      {"COHORT_CACHE_CAPACITY", "007",
       "COHORT_CACHE_CAPACITY='007' is invalid: expected a whole "
       "number from 0 to 16777216 (write 7, without leading "
       "zeros)"},
      {"COHORT_STALL_CHECK_DISABLE", "01", "COHORT_STALL_CHECK_DISABLE='01' is invalid"},
      {"COHORT_CONTROL_LEADERS", "1 ", "COHORT_CONTROL_LEADERS='1 ' is invalid"},
      {"COHORT_FAULT_CLOCK_SKEW_SECONDS", "-0", "COHORT_FAULT_CLOCK_SKEW_SECONDS='-0'"},
      {"COHORT_FAULT_CLOCK_SKEW_SECONDS", "+5", "(write 5, without a '+' sign)"},
      {"COHORT_FAULT_KILL_AT", "checkin:01:w",
       "entry '01' is not a whole number from 0 to "
       "1000000 (write 1, without leading zeros)"},
      {"COHORT_FAULT_KILL_AT", "checkin: 1:w", "entry ' 1'"},
  };
  for (const auto& row : rows) {
    INFO(row.name << "='" << row.value << "'");
    CHECK_THROWS_WITH(parse(cohortrun_env(row.name, row.value)), Catch::Contains(row.message));
  }
  // The same values spelt as numbers are spelt are taken.
  CHECK(parse(cohortrun_env("COHORT_CACHE_CAPACITY", "7")).cache_capacity == 7);
  CHECK(parse(cohortrun_env("COHORT_FAULT_CLOCK_SKEW_SECONDS", "-5")).fault_clock_skew.count() ==
        -5);
  CHECK(parse(cohortrun_env("COHORT_FAULT_KILL_AT", "checkin:1:w")).fault_kill_at->entry == 1);
}

TEST_CASE("config numbers: COHORT_SECRET is 64 hex digits, without signs or spaces") {
  CHECK(parse(cohortrun_env("COHORT_SECRET", std::string(62, 'a') + "Ff")).secret.size() == 32);
  for (std::string bad :
       {std::string(62, 'a') + " f", std::string(62, 'a') + "-1", std::string(62, 'a') + "+f",
        std::string(62, 'a') + "0x", std::string(62, 'a') + "g0"}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_WITH(parse(cohortrun_env("COHORT_SECRET", bad)),
                      "COHORT_SECRET='<hidden>' is invalid: expected 64 hex characters");
  }
}
