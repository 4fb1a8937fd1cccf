// Where a node's worker ids start: never at an id that the job's keys in etcd already name, so
// that a node restarted with the same --node-name does not inherit its predecessor's keys.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "agent/agent_name.h"

using namespace cohort::discovery;

TEST_CASE("agent name: a new node's worker ids start at 0") {
  std::map<std::string, std::string> values = {{"names/a", "41"},
                                               {"agents/a", "slots=2 workers=a.0.3,a.1.0"}};
  CHECK(first_spawns(values, "b").empty());
  CHECK(first_spawns({}, "c").empty());
}

TEST_CASE("agent name: a restarted node starts past every id of its name in keys and values") {
  std::map<std::string, std::string> values = {
      {"exits/c.0.0", "killed by signal 9 (SIGKILL)"},
      {"kills/c.0.1", "it did not check in"},
      {"elastic/checkin/c.1.4/2", "failed"},
      {"elastic/assign/c.0.2/0", "exit"},
      {"rounds/3", "generation=1\na.0.0 a 2\nc.1.6 c 0\n"},
      {"elastic/notice/2", "worker c.2.9 on c is ready to join"},
      // Other nodes' ids, and words that only look alike.
      {"exits/c.x.0.7", "0"},
      {"exits/cc.0.8", "0"},
      {"exits/c.0", "0"},
      {"exits/c.0.1.5", "0"}};
  auto first = first_spawns(values, "c");
  CHECK(first == std::map<int, int>{{0, 3}, {1, 7}, {2, 10}});
}

TEST_CASE("agent name: a node name with characters outside worker ids matches its ids") {
  std::map<std::string, std::string> values = {{"exits/pod_7.0.2", "0"}};
  CHECK(first_spawns(values, "pod/7") == std::map<int, int>{{0, 3}});
}
