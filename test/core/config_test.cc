#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "base/launch_env.h"
#include "cohort/errors.h"
#include "core/config.h"
#include "core/config_table.h"

using cohort::Config;

namespace {

Config parse(std::map<std::string, std::string> vars) {
  return Config::from([&](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

std::map<std::string, std::string> cohortrun_env() {
  return {{"COHORT_RANK", "1"},
          {"COHORT_SIZE", "4"},
          {"COHORT_RENDEZVOUS_ADDR", "127.0.0.1"},
          {"COHORT_RENDEZVOUS_PORT", "4000"},
          {"COHORT_SECRET", std::string(64, 'a')}};
}

void expect_rejected(std::map<std::string, std::string> vars, const std::string& fragment) {
  REQUIRE_THROWS_AS(parse(vars), cohort::InvalidArgument);
  REQUIRE_THROWS_WITH(parse(vars), Catch::Matchers::Contains(fragment));
}

}  // namespace

TEST_CASE("no launcher means a world of one with defaults") {
  Config c = parse({});
  CHECK(c.launcher == Config::Launcher::kNone);
  CHECK(c.placement.size == 1);
  CHECK(c.placement.rank == 0);
  CHECK(c.timeout == std::chrono::seconds(30));
  CHECK(c.cpu_operations == Config::CpuOperations::kGloo);
  CHECK(c.stall_check);
  CHECK(c.stall_check_time == std::chrono::seconds(60));
  CHECK(c.stall_shutdown_time.count() == 0);
  CHECK(c.cycle_time == std::chrono::milliseconds(1));
  CHECK(c.peer_timeout == std::chrono::seconds(5));
}

TEST_CASE("the peer timeout is read in seconds, fractions allowed, and must be positive") {
  CHECK(parse({{"COHORT_PEER_TIMEOUT_SECONDS", "0.25"}}).peer_timeout ==
        std::chrono::milliseconds(250));
  CHECK(parse({{"COHORT_PEER_TIMEOUT_SECONDS", "2"}}).peer_timeout == std::chrono::seconds(2));
  for (const char* bad : {"0", "-1", "5s", "", "nan", "inf"}) {
    expect_rejected({{"COHORT_PEER_TIMEOUT_SECONDS", bad}},
                    std::string("COHORT_PEER_TIMEOUT_SECONDS='") + bad + "' is invalid");
  }
}

TEST_CASE("the cycle time is read in milliseconds, fractions and 0 allowed") {
  CHECK(parse({{"COHORT_CYCLE_TIME", "2.5"}}).cycle_time == std::chrono::microseconds(2500));
  CHECK(parse({{"COHORT_CYCLE_TIME", "0"}}).cycle_time.count() == 0);
  expect_rejected({{"COHORT_CYCLE_TIME", "-1"}}, "COHORT_CYCLE_TIME='-1'");
  expect_rejected({{"COHORT_CYCLE_TIME", "1ms"}}, "expected a non-negative number of milliseconds");
  CHECK(parse({{"COHORT_CYCLE_TIME", "0.0"}}).cycle_time.count() == 0);
  CHECK(parse({{"COHORT_CYCLE_TIME", "0.001"}}).cycle_time == std::chrono::microseconds(1));
  // Below a microsecond it would be cut to 0, which turns the batching off: refused instead.
  expect_rejected({{"COHORT_CYCLE_TIME", "0.0001"}},
                  "COHORT_CYCLE_TIME='0.0001' is invalid: shorter than 0.001 milliseconds");
}

TEST_CASE("durations shorter than what a setting can hold are refused, naming the variable") {
  // Held in whole milliseconds: less than 1 ms used to become 0 (a zero timeout, or "never").
  for (const char* name : {"COHORT_TIMEOUT_SECONDS", "COHORT_SHUTDOWN_TIMEOUT_SECONDS",
                           "COHORT_STALL_CHECK_TIME_SECONDS", "COHORT_STALL_SHUTDOWN_TIME_SECONDS",
                           "COHORT_ELASTIC_TIMEOUT_SECONDS"}) {
    for (const char* tiny : {"0.0005", "1e-9", "0.000999"}) {
      expect_rejected({{name, tiny}}, std::string(name) + "='" + tiny +
                                          "' is invalid: shorter than 0.001 seconds, the "
                                          "shortest time it can hold");
    }
    CHECK_NOTHROW(parse({{name, "0.001"}}));
  }
  CHECK(parse({{"COHORT_TIMEOUT_SECONDS", "0.001"}}).timeout == std::chrono::milliseconds(1));
  // Held in microseconds.
  expect_rejected({{"COHORT_PEER_TIMEOUT_SECONDS", "1e-7"}},
                  "COHORT_PEER_TIMEOUT_SECONDS='1e-7' is invalid: shorter than 1e-06 seconds");
  CHECK(parse({{"COHORT_PEER_TIMEOUT_SECONDS", "1e-6"}}).peer_timeout ==
        std::chrono::microseconds(1));
  // 0 is "never" for the stall shutdown time however it is written; anything else is a duration.
  CHECK(parse({{"COHORT_STALL_SHUTDOWN_TIME_SECONDS", "0.0"}}).stall_shutdown_time.count() == 0);
  expect_rejected({{"COHORT_STALL_SHUTDOWN_TIME_SECONDS", "1e-9"}}, "(0 means off)");
  expect_rejected({{"COHORT_STALL_SHUTDOWN_TIME_SECONDS", "-1"}},
                  "expected a non-negative number of seconds");
  // Too long, infinite or not a number.
  expect_rejected({{"COHORT_TIMEOUT_SECONDS", "1e8"}},
                  "COHORT_TIMEOUT_SECONDS='1e8' is invalid: longer than 1e+07 seconds");
  expect_rejected({{"COHORT_TIMEOUT_SECONDS", "inf"}}, "longer than 1e+07 seconds");
  expect_rejected({{"COHORT_STALL_SHUTDOWN_TIME_SECONDS", "nan"}},
                  "COHORT_STALL_SHUTDOWN_TIME_SECONDS='nan' is invalid");
  expect_rejected({{"COHORT_CYCLE_TIME", "nan"}}, "COHORT_CYCLE_TIME='nan' is invalid");
}

TEST_CASE("stall settings are read") {
  Config c = parse({{"COHORT_STALL_CHECK_TIME_SECONDS", "1.5"},
                    {"COHORT_STALL_SHUTDOWN_TIME_SECONDS", "10"},
                    {"COHORT_STALL_CHECK_DISABLE", "1"}});
  CHECK(c.stall_check_time == std::chrono::milliseconds(1500));
  CHECK(c.stall_shutdown_time == std::chrono::seconds(10));
  CHECK_FALSE(c.stall_check);
  CHECK(parse({{"COHORT_STALL_SHUTDOWN_TIME_SECONDS", "0"}}).stall_shutdown_time.count() == 0);
}

TEST_CASE("cohortrun's environment is read") {
  auto vars = cohortrun_env();
  vars["COHORT_LOCAL_RANK"] = "1";
  vars["COHORT_LOCAL_SIZE"] = "2";
  vars["COHORT_CROSS_RANK"] = "0";
  vars["COHORT_CROSS_SIZE"] = "2";
  vars["COHORT_TIMEOUT_SECONDS"] = "2.5";
  Config c = parse(vars);
  CHECK(c.launcher == Config::Launcher::kCohortrun);
  CHECK(c.placement.rank == 1);
  CHECK(c.placement.size == 4);
  CHECK(c.rendezvous_port == 4000);
  CHECK(c.secret.size() == 32);
  CHECK(c.hosts_placed);
  CHECK(c.placement.local_rank == 1);
  CHECK(c.placement.local_size == 2);
  CHECK(c.placement.cross_rank == 0);
  CHECK(c.placement.cross_size == 2);
  CHECK(c.timeout == std::chrono::milliseconds(2500));
  // Without the placement variables the runtime works the placement out itself.
  CHECK_FALSE(parse(cohortrun_env()).hosts_placed);
}

TEST_CASE("an inconsistent placement is refused, naming the variable") {
  auto placed = [](std::map<std::string, std::string> placement) {
    auto vars = cohortrun_env();  // rank 1 of 4
    for (auto& [name, value] : placement) vars[name] = value;
    return vars;
  };
  auto layout = [&](const char* lr, const char* ls, const char* cr, const char* cs) {
    return placed({{"COHORT_LOCAL_RANK", lr},
                   {"COHORT_LOCAL_SIZE", ls},
                   {"COHORT_CROSS_RANK", cr},
                   {"COHORT_CROSS_SIZE", cs}});
  };
  CHECK_NOTHROW(parse(layout("0", "1", "1", "4")));
  expect_rejected(layout("1", "1", "0", "1"),
                  "COHORT_LOCAL_RANK='1' is invalid: must be below COHORT_LOCAL_SIZE=1");
  expect_rejected(layout("0", "2", "2", "2"),
                  "COHORT_CROSS_RANK='2' is invalid: must be below COHORT_CROSS_SIZE=2");
  expect_rejected(layout("0", "0", "0", "1"), "COHORT_LOCAL_SIZE='0' is invalid");
  expect_rejected(layout("0", "5", "0", "1"), "COHORT_LOCAL_SIZE='5' is invalid");
  expect_rejected(layout("0", "1", "-1", "1"), "COHORT_CROSS_RANK='-1' is invalid");
  expect_rejected(placed({{"COHORT_LOCAL_RANK", "1"}}),
                  "COHORT_LOCAL_RANK is set but COHORT_CROSS_SIZE is not");
  expect_rejected(placed({{"COHORT_LOCAL_RANK", "0"}, {"COHORT_LOCAL_SIZE", "1"}}), "go together");
}

TEST_CASE("mpirun's environment selects MPI unless Gloo is asked for") {
  Config c = parse({{"OMPI_COMM_WORLD_SIZE", "2"}});
  CHECK(c.launcher == Config::Launcher::kMpirun);
  CHECK(c.cpu_operations == Config::CpuOperations::kMpi);
  Config g = parse({{"OMPI_COMM_WORLD_SIZE", "2"}, {"COHORT_CPU_OPERATIONS", "gloo"}});
  CHECK(g.cpu_operations == Config::CpuOperations::kGloo);
  CHECK_FALSE(g.hostname.empty());
}

TEST_CASE("invalid values name the variable") {
  auto bad = cohortrun_env();
  bad["COHORT_RANK"] = "4";
  expect_rejected(bad, "COHORT_RANK='4' is invalid");
  bad = cohortrun_env();
  bad["COHORT_SIZE"] = "two";
  expect_rejected(bad, "COHORT_SIZE='two'");
  bad = cohortrun_env();
  bad["COHORT_SECRET"] = "xyz";
  expect_rejected(bad, "COHORT_SECRET");
  bad = cohortrun_env();
  bad.erase("COHORT_RENDEZVOUS_PORT");
  expect_rejected(bad, "COHORT_RENDEZVOUS_PORT is not set");
  expect_rejected({{"COHORT_TIMEOUT_SECONDS", "-1"}}, "COHORT_TIMEOUT_SECONDS='-1'");
  expect_rejected({{"COHORT_TIMEOUT_SECONDS", "5s"}}, "COHORT_TIMEOUT_SECONDS='5s'");
  expect_rejected({{"COHORT_LOG_LEVEL", "loud"}}, "COHORT_LOG_LEVEL='loud'");
  expect_rejected({{"COHORT_STALL_CHECK_TIME_SECONDS", "0"}},
                  "COHORT_STALL_CHECK_TIME_SECONDS='0'");
  expect_rejected({{"COHORT_STALL_SHUTDOWN_TIME_SECONDS", "soon"}},
                  "COHORT_STALL_SHUTDOWN_TIME_SECONDS='soon'");
  expect_rejected({{"COHORT_STALL_CHECK_DISABLE", "yes"}}, "COHORT_STALL_CHECK_DISABLE='yes'");
  expect_rejected({{"COHORT_CPU_OPERATIONS", "nccl"}}, "COHORT_CPU_OPERATIONS='nccl'");
  expect_rejected({{"COHORT_CPU_OPERATIONS", "mpi"}}, "needs a job started by mpirun");
}

namespace {

std::map<std::string, std::string> elastic_env() {
  return {{"COHORT_WORKER_ID", "host-a:0"},
          {"COHORT_HOSTNAME", "127.0.0.2"},
          {"COHORT_RENDEZVOUS_ADDR", "127.0.0.1"},
          {"COHORT_RENDEZVOUS_PORT", "4000"},
          {"COHORT_SECRET", std::string(64, 'b')}};
}

std::map<std::string, std::string> with(std::map<std::string, std::string> vars,
                                        const std::string& name, const std::string& value) {
  vars[name] = value;
  return vars;
}

}  // namespace

TEST_CASE("an elastic worker is known by its id and gets no rank from the environment") {
  Config c = parse(elastic_env());
  CHECK(c.launcher == Config::Launcher::kCohortrun);
  CHECK(c.elastic());
  CHECK(c.worker_id == "host-a:0");
  CHECK(c.hostname == "127.0.0.2");
  CHECK(c.rendezvous_addr == "127.0.0.1");
  CHECK(c.rendezvous_port == 4000);
  CHECK(c.secret == std::string(32, '\xbb'));
  CHECK(c.elastic_timeout == std::chrono::seconds(600));
  CHECK_FALSE(parse(cohortrun_env()).elastic());
  CHECK_FALSE(parse({}).elastic());
}

TEST_CASE("worker ids are short words of letters, digits and . _ : -") {
  CHECK(parse(with(elastic_env(), "COHORT_WORKER_ID", "a.B_9:z-")).worker_id == "a.B_9:z-");
  CHECK(parse(with(elastic_env(), "COHORT_WORKER_ID", std::string(128, 'w'))).worker_id.size() ==
        128);
  expect_rejected(with(elastic_env(), "COHORT_WORKER_ID", ""), "COHORT_WORKER_ID='' is invalid");
  expect_rejected(with(elastic_env(), "COHORT_WORKER_ID", std::string(129, 'w')),
                  "longer than 128 characters");
  for (std::string bad : {"a/b", "a b", "a=b", "\xc3\xa9", "a\n"}) {
    expect_rejected(with(elastic_env(), "COHORT_WORKER_ID", bad),
                    "may contain only A-Z a-z 0-9 . _ : -");
  }
}

TEST_CASE("an elastic worker must not be given a rank, size or placement") {
  for (const char* name : {"COHORT_RANK", "COHORT_SIZE", "COHORT_LOCAL_RANK", "COHORT_LOCAL_SIZE",
                           "COHORT_CROSS_RANK", "COHORT_CROSS_SIZE"}) {
    expect_rejected(with(elastic_env(), name, "1"),
                    std::string(name) + " is set together with COHORT_WORKER_ID");
  }
}

TEST_CASE("an elastic worker needs the launcher's address and secret") {
  for (const char* name : {"COHORT_RENDEZVOUS_ADDR", "COHORT_RENDEZVOUS_PORT", "COHORT_SECRET"}) {
    auto vars = elastic_env();
    vars.erase(name);
    expect_rejected(vars, std::string(name) + " is not set, but COHORT_WORKER_ID is");
  }
  expect_rejected(with(elastic_env(), "COHORT_RENDEZVOUS_PORT", "0"),
                  "COHORT_RENDEZVOUS_PORT='0' is invalid");
  expect_rejected(with(elastic_env(), "COHORT_SECRET", "xyz"), "expected 64 hex characters");
}

TEST_CASE("the elastic timeout is read in seconds") {
  CHECK(parse(with(elastic_env(), "COHORT_ELASTIC_TIMEOUT_SECONDS", "2.5")).elastic_timeout ==
        std::chrono::milliseconds(2500));
  expect_rejected(with(elastic_env(), "COHORT_ELASTIC_TIMEOUT_SECONDS", "0"),
                  "COHORT_ELASTIC_TIMEOUT_SECONDS='0' is invalid");
  expect_rejected(with(elastic_env(), "COHORT_ELASTIC_TIMEOUT_SECONDS", "soon"),
                  "expected a number of seconds");
}

namespace {

namespace table = cohort::config_table;

std::string shown(const Config& c, const std::string& name) {
  for (const auto& setting : table::settings()) {
    if (setting.name == name) return table::show(setting, c);
  }
  FAIL("no row " << name);
  return "";
}

}  // namespace

TEST_CASE("every row of the settings table has its own name and a line of doc") {
  std::set<std::string> names;
  for (const auto& setting : table::settings()) {
    CHECK(std::string(setting.name).starts_with("COHORT_"));
    CHECK(names.insert(setting.name).second);
    CHECK_FALSE(std::string(setting.doc).empty());
    CHECK(std::string(setting.doc).find('\n') == std::string::npos);
  }
  CHECK_FALSE(names.empty());
}

TEST_CASE("every setting reads back its default and other values as the table shows them") {
  const Config defaults;
  for (const auto& setting : table::settings()) {
    std::string text = table::show(setting, defaults);
    CAPTURE(setting.name, text);
    if (text == "unset") continue;
    CHECK(shown(parse({{setting.name, text}}), setting.name) == text);
  }
  for (const auto& [name, value] :
       std::map<std::string, std::string>{{"COHORT_TIMEOUT_SECONDS", "2.5"},
                                          {"COHORT_PEER_TIMEOUT_SECONDS", "1e-06"},
                                          {"COHORT_CYCLE_TIME", "0.25"},
                                          {"COHORT_STALL_SHUTDOWN_TIME_SECONDS", "0.001"},
                                          {"COHORT_STALL_CHECK_DISABLE", "1"},
                                          {"COHORT_FUSION_THRESHOLD", "0"},
                                          {"COHORT_LOG_LEVEL", "debug"},
                                          {"COHORT_TIMELINE", "/tmp/timeline.json"},
                                          {"COHORT_FAULT_KILL_AT", "sync:2:host-a:0"}}) {
    CAPTURE(name);
    CHECK(shown(parse({{name, value}}), name) == value);
  }
}

TEST_CASE("every setting but free text refuses garbage naming the variable and the value") {
  for (const auto& setting : table::settings()) {
    if (std::holds_alternative<table::Text>(setting.field)) continue;
    expect_rejected({{setting.name, "#garbage"}},
                    std::string(setting.name) + "='#garbage' is invalid: ");
  }
  CHECK(parse({{"COHORT_TIMELINE", "#garbage"}}).timeline_path == "#garbage");
}

TEST_CASE("mpirun is known by either of its variables and cohortrun's come first") {
  CHECK(parse({{"PMIX_RANK", "0"}}).launcher == Config::Launcher::kMpirun);
  auto vars = cohortrun_env();
  vars["OMPI_COMM_WORLD_SIZE"] = "4";
  CHECK(parse(vars).launcher == Config::Launcher::kCohortrun);
  CHECK(cohort::env::launched_by_mpirun([](const char* name) -> std::optional<std::string> {
    if (std::string(name) == "PMIX_RANK") return "3";
    return std::nullopt;
  }));
}

TEST_CASE("an elastic worker's store may be etcd instead of the launcher's server") {
  auto vars = elastic_env();
  vars.erase("COHORT_RENDEZVOUS_ADDR");
  vars.erase("COHORT_RENDEZVOUS_PORT");
  vars["COHORT_ETCD_ENDPOINTS"] = "http://10.0.0.1:2379,https://10.0.0.2:2379";
  vars["COHORT_ETCD_PREFIX"] = "/cohort/job-7/";
  vars["COHORT_ETCD_CA_FILE"] = "/etc/ca.pem";
  Config c = parse(vars);
  CHECK(c.etcd_endpoints ==
        std::vector<std::string>{"http://10.0.0.1:2379", "https://10.0.0.2:2379"});
  CHECK(c.etcd_prefix == "/cohort/job-7/");
  CHECK(c.etcd_ca_file == "/etc/ca.pem");
  CHECK(c.etcd_cert_file.empty());
  CHECK(c.rendezvous_addr.empty());
  CHECK(c.secret == std::string(32, '\xbb'));

  expect_rejected(with(vars, "COHORT_ETCD_ENDPOINTS", "http://a:1,10.0.0.2:2379"),
                  "'10.0.0.2:2379' is not an http:// or https:// URL");
  expect_rejected(with(vars, "COHORT_ETCD_ENDPOINTS", "http://a:1,"), "'' is not an http://");
  for (std::string bad : {"cohort/job/", "/cohort/job", "/"}) {
    expect_rejected(with(vars, "COHORT_ETCD_PREFIX", bad), "expected a key path");
  }
  auto no_prefix = vars;
  no_prefix.erase("COHORT_ETCD_PREFIX");
  expect_rejected(no_prefix, "COHORT_ETCD_PREFIX is not set, but COHORT_ETCD_ENDPOINTS is");
  expect_rejected(with(vars, "COHORT_RENDEZVOUS_ADDR", "127.0.0.1"),
                  "COHORT_RENDEZVOUS_ADDR and COHORT_ETCD_ENDPOINTS are both set");
  auto no_secret = vars;
  no_secret.erase("COHORT_SECRET");
  expect_rejected(no_secret, "COHORT_SECRET is not set, but COHORT_WORKER_ID is");
}

TEST_CASE("the two timeouts: the one not set is fitted to the other, both set must agree") {
  Config c = parse({{"COHORT_TIMEOUT_SECONDS", "5"}});
  CHECK(c.timeout == std::chrono::seconds(5));
  CHECK(c.peer_timeout == std::chrono::milliseconds(2500));
  REQUIRE(c.timeouts_fitted);
  CHECK_THAT(*c.timeouts_fitted, Catch::Matchers::Contains("COHORT_PEER_TIMEOUT_SECONDS lowered"));
  c = parse({{"COHORT_PEER_TIMEOUT_SECONDS", "40"}});
  CHECK(c.timeout == std::chrono::seconds(80));
  CHECK(c.timeouts_fitted);
  CHECK_FALSE(parse({}).timeouts_fitted);
  expect_rejected({{"COHORT_TIMEOUT_SECONDS", "5"}, {"COHORT_PEER_TIMEOUT_SECONDS", "5"}},
                  "COHORT_TIMEOUT_SECONDS 5 s is not longer than COHORT_PEER_TIMEOUT_SECONDS 5 s");
}
