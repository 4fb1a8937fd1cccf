// ElasticRoster: the order in which workers are offered to a new round, and which ones a round
// waits for.
#include <catch2/catch.hpp>

#include "elastic_job/elastic_roster.h"

using namespace cohort;
using namespace cohort::discovery;

TEST_CASE("the roster offers last round's members by rank then new workers by id") {
  ElasticHosts hosts({.min_np = 1});
  hosts.update({{"a", 2}, {"b", 2}});
  ElasticRoster roster;
  ElasticWorker& w0 = roster.add({"a", 0});
  ElasticWorker& w1 = roster.add({"a", 1});
  ElasticWorker& w2 = roster.add({"b", 0});
  ElasticWorker& w3 = roster.add({"b", 1});
  CHECK(w3.id == 3);
  w0.rank = 1;
  w1.rank = 0;
  CHECK(w2.label() == "w2");
  CHECK(w1.label() == "0");
  CHECK(w1.name() == "worker 1 (rank 0 on a slot 1)");
  CHECK(w3.name() == "worker 3 (on b slot 1)");
  w3.leaving = true;
  auto order = roster.alive_in_order();
  REQUIRE(order.size() == 3);
  CHECK(order[0]->id == 1);
  CHECK(order[1]->id == 0);
  CHECK(order[2]->id == 2);
  CHECK(ElasticRoster::slots_of(order) == std::vector<SlotRef>{{"a", 1}, {"a", 0}, {"b", 0}});
}

TEST_CASE("a round waits only for running workers on usable slots, and ids are never reused") {
  ElasticHosts hosts({.min_np = 1});
  hosts.update({{"a", 2}, {"b", 1}});
  ElasticRoster roster;
  roster.add({"a", 0});
  ElasticWorker& gone = roster.add({"a", 1});
  roster.add({"b", 0});
  gone.running = false;
  CHECK(roster.others_running_on("a", 1));
  CHECK_FALSE(roster.others_running_on("b", 2));
  hosts.update({{"a", 2}});  // b removed
  auto wanted = roster.wanted(hosts);
  REQUIRE(wanted.size() == 1);
  CHECK(wanted[0]->id == 0);
  CHECK(roster.on_slot({"a", 1}) == nullptr);  // its worker is gone
  CHECK(roster.add({"a", 1}).id == 3);
}

TEST_CASE("once a worker finished, a round is offered only workers that had a rank (rule 10)") {
  ElasticHosts hosts({.min_np = 1});
  hosts.update({{"a", 2}, {"b", 1}});
  ElasticRoster roster;
  ElasticWorker& member = roster.add({"a", 0});
  ElasticWorker& finished = roster.add({"a", 1});
  roster.add({"b", 0});  // started to replace a failed worker, not in a round yet
  member.rank = 0;
  finished.rank = 1;
  finished.finished = true;
  CHECK(ElasticRoster::slots_of(roster.wanted(hosts)) == std::vector<SlotRef>{{"a", 0}, {"b", 0}});
  CHECK(ElasticRoster::slots_of(roster.wanted(hosts, /*newcomers=*/false)) ==
        std::vector<SlotRef>{{"a", 0}});
}
