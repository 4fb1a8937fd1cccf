// The settings every rank must hold alike (core/agreement.h): which ones, and the error that
// names each difference with the ranks and hosts on each side. The exchange itself runs between
// real processes in test/integration/agreement.sh.
#include "core/agreement.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/config.h"

using cohort::alike_settings;
using cohort::Config;
using cohort::describe_disagreement;

namespace {

Config config_of(std::vector<std::pair<std::string, std::string>> vars) {
  return Config::from([vars](const char* name) -> std::optional<std::string> {
    for (const auto& [k, v] : vars) {
      if (k == name) return v;
    }
    return std::nullopt;
  });
}

}  // namespace

TEST_CASE("agreement: the alike settings are those that shape connections and collectives") {
  CHECK(alike_settings(Config{}) ==
        "COHORT_CPU_OPERATIONS=gloo\n"
        "COHORT_PEER_TIMEOUT_SECONDS=5\n"
        "COHORT_SHARED_MEMORY_DISABLE=0\n"
        "COHORT_CONTROL_LEADERS=auto\n"
        "COHORT_HIERARCHICAL=auto\n"
        "COHORT_SHARED_MEMORY_SLOT_BYTES=1048576\n"
        "COHORT_DEVICE_OPERATIONS=auto\n"
        "COHORT_STAGED_CHUNK_BYTES=4194304\n"
        "COHORT_STATE_REPLICAS=1\n"
        "COHORT_STATE_OVERLAP_DISABLE=0\n");
}

TEST_CASE("agreement: a rank's own settings are not compared") {
  auto a = config_of({{"COHORT_CYCLE_TIME", "5"}, {"COHORT_LOG_LEVEL", "debug"}});
  auto b = config_of({{"COHORT_FUSION_THRESHOLD", "0"}, {"COHORT_TIMEOUT_SECONDS", "60"}});
  CHECK(alike_settings(a) == alike_settings(b));
}

TEST_CASE("agreement: alike records give no error") {
  std::string r = alike_settings(Config{});
  std::vector<std::string> records{r, r, r};
  std::vector<std::string> hosts{"a", "a", "b"};
  CHECK(describe_disagreement(records, hosts).empty());
}

TEST_CASE("agreement: each differing setting is named with the ranks and hosts on each side") {
  std::string base = alike_settings(Config{});
  std::string leaders = alike_settings(config_of({{"COHORT_CONTROL_LEADERS", "1"}}));
  std::string both = alike_settings(
      config_of({{"COHORT_CONTROL_LEADERS", "1"}, {"COHORT_SHARED_MEMORY_DISABLE", "1"}}));
  std::vector<std::string> records{base, base, leaders, both};
  std::vector<std::string> hosts{"a", "b", "b", "c"};
  CHECK(describe_disagreement(records, hosts) ==
        "the ranks hold different values of settings that every rank must hold alike "
        "(docs/environment.md): COHORT_SHARED_MEMORY_DISABLE: '0' on ranks 0 to 2 (hosts a, b), "
        "'1' on rank 3 (host c); COHORT_CONTROL_LEADERS: 'auto' on ranks 0 to 1 (hosts a, b), "
        "'1' on ranks 2 to 3 (hosts b, c)");
}

TEST_CASE("agreement: a setting one rank's Cohort does not know is named as such") {
  std::string base = alike_settings(Config{});
  std::string newer = base + "COHORT_SOMETHING_NEW=7\n";
  std::vector<std::string> records{base, newer};
  std::vector<std::string> hosts{"a", "a"};
  CHECK(describe_disagreement(records, hosts) ==
        "the ranks hold different values of settings that every rank must hold alike "
        "(docs/environment.md): COHORT_SOMETHING_NEW: (not a setting of this rank's Cohort) on "
        "rank 0 (host a), '7' on rank 1 (host a)");
}
