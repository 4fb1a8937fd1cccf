// The Kubernetes operators' variables read as cohortrun's flags (cohortrun/operator_env.h):
// tables of environment and flags in, options or the error out.
#include "cohortrun/operator_env.h"

#include <catch2/catch.hpp>

#include "cohort/errors.h"

using namespace cohort::discovery;

namespace {

// What an elastic PyTorchJob on etcd injects (docs/kubernetes.md).
const OperatorEnv kElastic = {{"PET_RDZV_BACKEND", "etcd"},
                              {"PET_RDZV_ENDPOINT", "etcd.default.svc:2379"},
                              {"PET_RDZV_ID", "resnet-0412"},
                              {"PET_NNODES", "2:3"},
                              {"PET_NPROC_PER_NODE", "2"}};

OperatorEnv with(OperatorEnv env, const std::string& name, const std::string& value) {
  env[name] = value;
  return env;
}

// The options as the flags in `flags` (name -> value set on `o` by the test) left them.
struct Case {
  std::string name;
  OperatorEnv env;
  std::set<std::string> given;
  std::function<void(CohortrunOptions&)> flags;
  std::string error;  // empty: must succeed
};

}  // namespace

TEST_CASE("operator env: an elastic PyTorchJob on etcd is agent mode") {
  CohortrunOptions o;
  auto result = apply_operator_env(kElastic, {}, o);
  CHECK(o.rdzv_backend == "etcd");
  CHECK(o.rdzv_endpoints == "http://etcd.default.svc:2379");
  CHECK(o.rdzv_id == "resnet-0412");
  CHECK(o.nnodes == "2:3");
  CHECK(o.nproc_per_node == 2);
  CHECK(o.node_name.empty());  // the host name: the pod's name
  CHECK(result.warnings.empty());
  CHECK(result.unset.empty());
}

TEST_CASE("operator env: what each variable fills") {
  struct Row {
    OperatorEnv env;
    std::function<bool(const CohortrunOptions&)> check;
  };
  std::vector<Row> rows = {
      {with(kElastic, "PET_RDZV_BACKEND", "etcd-v2"),
       [](auto& o) { return o.rdzv_backend == "etcd"; }},
      {with(kElastic, "PET_NNODES", "4"), [](auto& o) { return o.nnodes == "4:4"; }},
      {with(kElastic, "PET_NODE_RANK", "2"), [](auto& o) { return o.node_name == "2"; }},
      {with(kElastic, "PET_RDZV_ENDPOINT", "https://e1:2379,e2:2379"),
       [](auto& o) { return o.rdzv_endpoints == "https://e1:2379,http://e2:2379"; }},
      {with(kElastic, "PET_MASTER_ADDR", "resnet-master-0"),
       [](auto& o) { return o.rdzv_backend == "etcd"; }},
      // torchrun on one node (static, PET_NNODES=1): the one launcher with -np.
      {{{"PET_NNODES", "1"}, {"PET_NPROC_PER_NODE", "4"}, {"PET_NODE_RANK", "0"}},
       [](auto& o) { return o.rdzv_backend == "builtin" && o.np == "4"; }},
      {{{"PET_RDZV_BACKEND", "c10d"}, {"PET_NNODES", "1"}},
       [](auto& o) { return o.rdzv_backend == "builtin" && o.np.empty(); }},
      // The MPI Operator's launcher.
      {{{"OMPI_MCA_orte_set_default_slots", "8"},
        {"OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"}},
       [](auto& o) { return o.slots_per_host == 8 && o.hostfile == "/etc/mpi/hostfile"; }},
      {{}, [](auto& o) { return o.rdzv_backend == "builtin" && o.hostfile.empty(); }},
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i);
    CohortrunOptions o;
    apply_operator_env(rows[i].env, {}, o);
    CHECK(rows[i].check(o));
  }
}

TEST_CASE("operator env: bad values and conflicts are errors naming the variable") {
  auto set = [](auto f) { return std::function<void(CohortrunOptions&)>(f); };
  auto none = set([](CohortrunOptions&) {});
  std::vector<Case> cases = {
      {"nnodes text",
       with(kElastic, "PET_NNODES", "two"),
       {},
       none,
       "PET_NNODES='two' is not N or MIN:MAX"},
      {"min over max",
       with(kElastic, "PET_NNODES", "3:2"),
       {},
       none,
       "PET_NNODES='3:2' is not N or MIN:MAX"},
      {"zero nodes", with(kElastic, "PET_NNODES", "0"), {}, none, "PET_NNODES='0'"},
      {"nproc auto",
       with(kElastic, "PET_NPROC_PER_NODE", "auto"),
       {},
       none,
       "PET_NPROC_PER_NODE='auto' is not a whole number from 1 to 4096 (torchrun's auto"},
      {"nproc zero", with(kElastic, "PET_NPROC_PER_NODE", "0"), {}, none, "PET_NPROC_PER_NODE='0'"},
      {"negative rank",
       with(kElastic, "PET_NODE_RANK", "-1"),
       {},
       none,
       "PET_NODE_RANK='-1' is not a node rank from 0 to 2"},
      {"rank = nnodes",
       with(kElastic, "PET_NODE_RANK", "3"),
       {},
       none,
       "PET_NODE_RANK='3' is not a node rank from 0 to 2 (PET_NNODES' MAX is 3)"},
      {"bad backend",
       with(kElastic, "PET_RDZV_BACKEND", "zookeeper"),
       {},
       none,
       "PET_RDZV_BACKEND='zookeeper' is not etcd, etcd-v2, c10d or static"},
      {"bad id",
       with(kElastic, "PET_RDZV_ID", "a b"),
       {},
       none,
       "PET_RDZV_ID='a b' is not a job id"},
      {"bad endpoint",
       with(kElastic, "PET_RDZV_ENDPOINT", "ftp://x:1"),
       {},
       none,
       "PET_RDZV_ENDPOINT='ftp://x:1' is not etcd's host:port or URLs"},
      {"bad master port",
       with(kElastic, "PET_MASTER_PORT", "http"),
       {},
       none,
       "PET_MASTER_PORT='http' is not a whole number from 1 to 65535"},
      {"c10d across nodes",
       with(kElastic, "PET_RDZV_BACKEND", "c10d"),
       {},
       none,
       "PET_NNODES='2:3' with PET_RDZV_BACKEND='c10d': Cohort's nodes meet only in etcd"},
      {"static across nodes",
       {{"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}},
       {},
       none,
       "PET_NNODES='2' with no PET_RDZV_BACKEND (torchrun's static rendezvous)"},
      {"static rank on one node",
       {{"PET_NNODES", "1"}, {"PET_NODE_RANK", "1"}},
       {},
       none,
       "PET_NODE_RANK='1' is not a node rank from 0 to 0"},
      {"nnodes flag disagrees",
       kElastic,
       {"--nnodes"},
       set([](auto& o) { o.nnodes = "2:4"; }),
       "PET_NNODES='2:3' disagrees with --nnodes '2:4'"},
      {"nproc flag disagrees",
       kElastic,
       {"--nproc-per-node"},
       set([](auto& o) { o.nproc_per_node = 8; }),
       "PET_NPROC_PER_NODE='2' disagrees with --nproc-per-node '8'"},
      {"id flag disagrees",
       kElastic,
       {"--rdzv-id"},
       set([](auto& o) { o.rdzv_id = "other"; }),
       "PET_RDZV_ID='resnet-0412' disagrees with --rdzv-id 'other'"},
      {"endpoint flag disagrees",
       kElastic,
       {"--rdzv-endpoints"},
       set([](auto& o) { o.rdzv_endpoints = "http://etcd-1:2379"; }),
       "PET_RDZV_ENDPOINT='etcd.default.svc:2379' disagrees with --rdzv-endpoints"},
      {"node name disagrees",
       with(kElastic, "PET_NODE_RANK", "1"),
       {"--node-name"},
       set([](auto& o) { o.node_name = "worker-1"; }),
       "PET_NODE_RANK='1' disagrees with --node-name 'worker-1'"},
      {"backend flag disagrees",
       kElastic,
       {"--rdzv-backend"},
       none,
       "PET_RDZV_BACKEND='etcd' disagrees with --rdzv-backend 'builtin'"},
      {"np flag disagrees",
       {{"PET_NNODES", "1"}, {"PET_NPROC_PER_NODE", "4"}},
       {"--np"},
       set([](auto& o) { o.np = "2"; }),
       "PET_NPROC_PER_NODE='4' disagrees with --np '2'"},
      {"slots flag disagrees",
       {{"OMPI_MCA_orte_set_default_slots", "8"}},
       {"--slots-per-host"},
       set([](auto& o) { o.slots_per_host = 4; }),
       "OMPI_MCA_orte_set_default_slots='8' disagrees with --slots-per-host '4'"},
      {"slots zero",
       {{"OMPI_MCA_orte_set_default_slots", "0"}},
       {},
       none,
       "OMPI_MCA_orte_set_default_slots='0' is not a whole number from 1 to 4096"},
      // Agreeing flags are no conflict, in any spelling.
      {"nnodes flag agrees",
       with(kElastic, "PET_NNODES", "3"),
       {"--nnodes"},
       set([](auto& o) { o.nnodes = "3:3"; }),
       ""},
      {"endpoint flag agrees",
       kElastic,
       {"--rdzv-endpoints", "--rdzv-backend"},
       set([](auto& o) {
         o.rdzv_endpoints = "http://etcd.default.svc:2379";
         o.rdzv_backend = "etcd";
       }),
       ""},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    CohortrunOptions o;
    c.flags(o);
    CohortrunOptions before = o;
    if (c.error.empty()) {
      CHECK_NOTHROW(apply_operator_env(c.env, c.given, o));
      continue;
    }
    CHECK_THROWS_WITH(apply_operator_env(c.env, c.given, o), Catch::StartsWith(c.error));
    // Bad input changes nothing.
    CHECK(o.rdzv_backend == before.rdzv_backend);
    CHECK(o.nnodes == before.nnodes);
    CHECK(o.rdzv_endpoints == before.rdzv_endpoints);
    CHECK(o.np == before.np);
  }
}

TEST_CASE("operator env: flags that agree win, and the rest is filled around them") {
  CohortrunOptions o;
  o.rdzv_id = "resnet-0412";
  apply_operator_env(kElastic, {"--rdzv-id"}, o);
  CHECK(o.rdzv_id == "resnet-0412");
  CHECK(o.nnodes == "2:3");
  // An explicit host list keeps the MPI Operator's default hostfile out, as with mpirun.
  CohortrunOptions hosts;
  apply_operator_env({{"OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"}}, {"--hosts"}, hosts);
  CHECK(hosts.hostfile.empty());
  CohortrunOptions script;
  apply_operator_env({{"OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"}},
                     {"--host-discovery-script"}, script);
  CHECK(script.hostfile.empty());
}

TEST_CASE("operator env: the pod's own variables go, torchrun's unknown ones are reported") {
  CohortrunOptions o;
  auto env = with(with(with(kElastic, "MASTER_ADDR", "m"), "RANK", "1"), "PET_MAX_RESTARTS", "3");
  auto result = apply_operator_env(env, {}, o);
  CHECK(result.unset == std::vector<std::string>{"MASTER_ADDR", "RANK"});
  REQUIRE(result.warnings.size() == 1);
  CHECK_THAT(result.warnings[0], Catch::StartsWith("PET_MAX_RESTARTS is set but cohortrun"));
  // Without any PET_ variable, MASTER_ADDR is someone else's: left alone.
  CohortrunOptions plain;
  CHECK(apply_operator_env({{"MASTER_ADDR", "m"}}, {}, plain).unset.empty());
}
