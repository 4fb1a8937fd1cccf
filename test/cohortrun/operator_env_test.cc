// The Kubernetes operators' variables read as cohortrun's flags (cohortrun/operator_env.h):
// tables of environment and flags in, options or the error out.
#include "cohortrun/operator_env.h"

#include <algorithm>
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
      // Numbers have one spelling (base/decimal.h); torchrun's int() takes these, Cohort does not.
      {"minus zero rank",
       with(kElastic, "PET_NODE_RANK", "-0"),
       {},
       none,
       "PET_NODE_RANK='-0' is not a node rank from 0 to 2 (write 0, without a sign; PET_NNODES' "
       "MAX is 3)"},
      {"leading zero rank",
       with(with(kElastic, "PET_NNODES", "8"), "PET_NODE_RANK", "007"),
       {},
       none,
       "PET_NODE_RANK='007' is not a node rank from 0 to 7 (write 7, without leading zeros;"},
      {"plus rank",
       with(kElastic, "PET_NODE_RANK", "+1"),
       {},
       none,
       "PET_NODE_RANK='+1' is not a node rank from 0 to 2 (write 1, without a '+' sign;"},
      {"leading zero nnodes",
       with(kElastic, "PET_NNODES", "02:3"),
       {},
       none,
       "PET_NNODES='02:3' is not N or MIN:MAX (whole numbers >= 1, MIN <= MAX): '02': write 2, "
       "without leading zeros"},
      {"spaced nproc",
       with(kElastic, "PET_NPROC_PER_NODE", " 2"),
       {},
       none,
       "PET_NPROC_PER_NODE=' 2' is not a whole number from 1 to 4096 (write 2, without spaces)"},
      // Endpoints are host:port (or URLs) with a port from 1 to 65535, refused before anything
      // starts (this one used to fail after 10 s, in libcurl).
      {"endpoint port too high",
       with(kElastic, "PET_RDZV_ENDPOINT", "127.0.0.1:99999"),
       {},
       none,
       "PET_RDZV_ENDPOINT='127.0.0.1:99999' is not etcd's host:port or URLs: etcd endpoint "
       "'http://127.0.0.1:99999': port '99999' is not a whole number from 1 to 65535"},
      {"endpoint port zero",
       with(kElastic, "PET_RDZV_ENDPOINT", "e:0"),
       {},
       none,
       "PET_RDZV_ENDPOINT='e:0' is not etcd's host:port or URLs: etcd endpoint 'http://e:0': port "
       "'0' is not a whole number from 1 to 65535"},
      {"endpoint port empty",
       with(kElastic, "PET_RDZV_ENDPOINT", "e:"),
       {},
       none,
       "PET_RDZV_ENDPOINT='e:' is not etcd's host:port or URLs: etcd endpoint 'http://e:': port "
       "''"},
      {"endpoint without host",
       with(kElastic, "PET_RDZV_ENDPOINT", ":2379"),
       {},
       none,
       "PET_RDZV_ENDPOINT=':2379' is not etcd's host:port or URLs: etcd endpoint 'http://:2379' "
       "names no host"},
      {"endpoint scheme only",
       with(kElastic, "PET_RDZV_ENDPOINT", "ftp://"),
       {},
       none,
       "PET_RDZV_ENDPOINT='ftp://' is not etcd's host:port or URLs: etcd endpoint 'ftp://' is not "
       "an http:// or https:// URL"},
      {"endpoint ipv6",
       with(kElastic, "PET_RDZV_ENDPOINT", "[::1]:2379"),
       {},
       none,
       "PET_RDZV_ENDPOINT='[::1]:2379' is not etcd's host:port or URLs: etcd endpoint "
       "'http://[::1]:2379' has an IPv6 address, which Cohort does not support"},
      {"endpoint path",
       with(kElastic, "PET_RDZV_ENDPOINT", "https://e:2379/v3"),
       {},
       none,
       "PET_RDZV_ENDPOINT='https://e:2379/v3' is not etcd's host:port or URLs: etcd endpoint "
       "'https://e:2379/v3' has more than a host and a port ('/v3')"},
      {"endpoint user",
       with(kElastic, "PET_RDZV_ENDPOINT", "http://root:pw@e:2379"),
       {},
       none,
       "PET_RDZV_ENDPOINT='http://root:pw@e:2379' is not etcd's host:port or URLs: etcd endpoint "
       "'http://root:pw@e:2379' has more than a host and a port ('@e:2379')"},
      {"endpoint host",
       with(kElastic, "PET_RDZV_ENDPOINT", "e tcd:2379"),
       {},
       none,
       "PET_RDZV_ENDPOINT='e tcd:2379' is not etcd's host:port or URLs: etcd endpoint "
       "'http://e tcd:2379': 'e tcd' is not a host name or an IPv4 address"},
      {"empty backend",
       with(kElastic, "PET_RDZV_BACKEND", ""),
       {},
       none,
       "PET_RDZV_BACKEND='' is not etcd, etcd-v2, c10d or static"},
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

// Every variable that is set is checked, whatever the mode: docs/kubernetes.md promises that a bad
// value is an error and nothing starts. Each mode below leaves some variables unread (one node with
// -np, -H, --min-np with -H, agent mode): each bad value must be refused in every one of them.
TEST_CASE("operator env: a bad value is refused in every mode, read or not") {
  struct Mode {
    const char* name;
    OperatorEnv env;
    std::set<std::string> given;
  };
  const std::vector<Mode> modes = {
      {"one node, -np given", {{"PET_NNODES", "1"}}, {"--np"}},
      {"one node, -H given", {{"PET_NNODES", "1"}}, {"--hosts"}},
      {"--min-np with -H", {{"PET_NNODES", "1"}}, {"--hosts", "--min-np"}},
      {"agent mode", kElastic, {}},
  };
  const std::vector<std::pair<std::string, std::vector<std::string>>> bad = {
      {"PET_RDZV_BACKEND", {"zookeeper", ""}},
      {"PET_RDZV_ENDPOINT", {"127.0.0.1:99999", "ftp://", "", "[::1]:2379", "e:0"}},
      {"PET_RDZV_ID", {"a/b", ""}},
      {"PET_NNODES", {"0", "x", "-0", "01"}},
      {"PET_NPROC_PER_NODE", {"abc", "0", "08", "auto"}},
      {"PET_NODE_RANK", {"-0", "007", "x", "-1"}},
      {"PET_MASTER_ADDR", {"a b", ""}},
      {"PET_MASTER_PORT", {"99999", "022", "0"}},
      {"PET_MAX_RESTARTS", {"-1", "03", "x"}},
      {"PET_RDZV_CONF", {"k", "=v", "k=", "a=1,,b=2"}},
      {"PET_STANDALONE", {"2", "yes"}},
      {"PET_MONITOR_INTERVAL", {"0", "nan", "x"}},
      {"PET_START_METHOD", {"thread", ""}},
      {"MASTER_ADDR", {"a b"}},
      {"MASTER_PORT", {"0", "65536"}},
      {"WORLD_SIZE", {"0", "04"}},
      {"RANK", {"-1", "01"}},
      {"OMPI_MCA_orte_set_default_slots", {"0", "04", "4096 "}},
      {"OMPI_MCA_orte_default_hostfile", {""}},
  };
  std::set<std::string> covered;
  for (const auto& [name, values] : bad) covered.insert(name);
  CHECK(covered == std::set<std::string>(kOperatorVariables.begin(), kOperatorVariables.end()));
  for (const auto& mode : modes) {
    for (const auto& [name, values] : bad) {
      for (const auto& value : values) {
        INFO(mode.name << ": " << name << "='" << value << "'");
        CohortrunOptions o;
        o.np = "2";
        CHECK_THROWS_WITH(apply_operator_env(with(mode.env, name, value), mode.given, o),
                          Catch::StartsWith(name + "='" + value + "'"));
        CHECK(o.np == "2");  // nothing changed
      }
    }
  }
}

TEST_CASE("operator env: the values torchrun and the operators write are accepted") {
  struct Row {
    std::string name, value;
  };
  const std::vector<Row> good = {
      {"PET_STANDALONE", ""},  // the training operator's "on"
      {"PET_STANDALONE", "1"},
      {"PET_RDZV_CONF", "rdzv-conf-name=rdzv-conf-value,rdzv-conf-name-1=rdzv-conf-value-1"},
      {"PET_RDZV_CONF", ""},
      {"PET_MONITOR_INTERVAL", "0.1"},
      {"PET_START_METHOD", "forkserver"},
      {"PET_MAX_RESTARTS", "0"},
      {"PET_MASTER_ADDR", "resnet-master-0"},
      {"PET_MASTER_ADDR", "fd00::1"},  // only checked: Cohort does not connect there
      {"PET_MASTER_PORT", "29500"},
      {"MASTER_ADDR", "10.0.0.7"},
      {"MASTER_PORT", "65535"},
      {"WORLD_SIZE", "4"},
      {"RANK", "0"},
      {"PET_NODE_RANK", "0"},
  };
  for (const auto& row : good) {
    INFO(row.name << "='" << row.value << "'");
    CohortrunOptions o;
    CHECK_NOTHROW(apply_operator_env(with(kElastic, row.name, row.value), {}, o));
  }
  // Without any PET_ variable, the pod's names are someone else's: not checked.
  CohortrunOptions plain;
  CHECK_NOTHROW(apply_operator_env({{"MASTER_PORT", "0"}, {"RANK", "x"}}, {}, plain));
}

TEST_CASE("operator env: torchrun's endpoint without a port is etcd's port 2379") {
  CohortrunOptions o;
  apply_operator_env(with(kElastic, "PET_RDZV_ENDPOINT", "etcd.default.svc"), {}, o);
  CHECK(o.rdzv_endpoints == "http://etcd.default.svc:2379");
  CohortrunOptions urls;  // a URL's port is the URL's: the scheme's where it has none
  apply_operator_env(with(kElastic, "PET_RDZV_ENDPOINT", "https://etcd.example.com"), {}, urls);
  CHECK(urls.rdzv_endpoints == "https://etcd.example.com");
}

TEST_CASE("operator env: valid variables the mode does not read are reported as ignored") {
  CohortrunOptions one;
  auto env = OperatorEnv{{"PET_NNODES", "1"},
                         {"PET_RDZV_ID", "job7"},
                         {"PET_RDZV_ENDPOINT", "e:2379"},
                         {"PET_NPROC_PER_NODE", "2"},
                         {"OMPI_MCA_orte_set_default_slots", "2"},
                         {"OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"}};
  auto result = apply_operator_env(env, {"--hosts"}, one);
  std::vector<std::string> expected;
  for (const char* name : {"PET_NPROC_PER_NODE", "PET_RDZV_ENDPOINT", "PET_RDZV_ID",
                           "OMPI_MCA_orte_set_default_slots", "OMPI_MCA_orte_default_hostfile"}) {
    expected.push_back(std::string(name) + "='" + env.at(name) +
                       "' is valid but not read by the one launcher (--rdzv-backend builtin) "
                       "(docs/kubernetes.md)");
  }
  std::sort(expected.begin(), expected.end());
  std::sort(result.ignored.begin(), result.ignored.end());
  CHECK(result.ignored == expected);
  // With a discovery script, the MPI Operator's slots are read.
  CohortrunOptions script;
  CHECK(apply_operator_env({{"OMPI_MCA_orte_set_default_slots", "2"}}, {"--host-discovery-script"},
                           script)
            .ignored.empty());
  // The doc's elastic PyTorchJob: every variable is read.
  CohortrunOptions agent;
  CHECK(apply_operator_env(kElastic, {}, agent).ignored.empty());
  CohortrunOptions master;
  CHECK(apply_operator_env(with(kElastic, "PET_MASTER_PORT", "29500"), {}, master).ignored ==
        std::vector<std::string>{"PET_MASTER_PORT='29500' is valid but not read by agent mode "
                                 "(--rdzv-backend etcd) (docs/kubernetes.md)"});
}
