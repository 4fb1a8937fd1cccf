// An agent's mirror of its job in etcd (agent/agent_mirror.h), fed by its watch
// (agent/agent_watch.h) against a real etcd (test/rendezvous/etcd_server.h): after one full read,
// the watch's changes keep it equal to what a full read would give, deletes and refused values
// included, and the watch says so when it cannot (history compacted, etcd's revision gone back).
// An agent that does not plan reads and is sent only the key ranges it acts on
// (agent/agent_ranges.h); one that comes to plan reads every key before it acts.
#include <poll.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/agent_mirror.h"
#include "agent/agent_name.h"
#include "agent/agent_ranges.h"
#include "agent/agent_view.h"
#include "agent/agent_watch.h"
#include "cohort/errors.h"
#include "launcher/wakeup.h"
#include "rendezvous/elastic_protocol.h"
#include "rendezvous/etcd_lease.h"
#include "rendezvous/etcd_store.h"
#include "rendezvous/signed_value.h"
#include "test/rendezvous/etcd_server.h"

using namespace cohort;
using namespace cohort::discovery;
using namespace cohort::rendezvous;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using Values = std::map<std::string, std::string>;

namespace {

const std::string kSecret(32, 'm');

std::string prefix_for(const std::string& test) {
  return "/cohort-test/" + std::to_string(::getpid()) + "/mirror-" + test + "/";
}

EtcdStoreOptions options_for(const std::string& prefix) {
  return {.etcd = {.endpoints = {testing::etcd_server().endpoint()}, .timeout = 5s},
          .prefix = prefix,
          .secret = kSecret};
}

// What a client of etcd without the job secret can do: put any bytes under any key.
void put_raw(const std::string& key, const std::string& value) {
  EtcdClient raw({.endpoints = {testing::etcd_server().endpoint()}});
  raw.call("/v3/kv/put", {{"key", base64(key)}, {"value", base64(value)}});
}

// An agent's reading of etcd in small: a full read into the mirror, then the watch.
struct Reader {
  explicit Reader(const std::string& prefix, KeyRanges read = planner_ranges())
      : store(options_for(prefix)), watch(options_for(prefix), wake), ranges(std::move(read)) {
    auto listing = store.list(ranges);
    int64_t revision = listing.revision;
    mirror.replace(std::move(listing), ranges);
    watch.watch_after(revision, ranges);
  }
  // Applies what the watch delivers while `behind()` holds, at most 10 s, into `all`.
  void pump(AgentWatch::Taken& all, const std::function<bool()>& behind) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (behind() && !all.lost && std::chrono::steady_clock::now() < deadline) {
      pollfd fd{wake.fd(), POLLIN, 0};
      ::poll(&fd, 1, 100);
      wake.drain();
      auto taken = watch.take();
      mirror.apply(taken.changes);
      all.changes.insert(all.changes.end(), taken.changes.begin(), taken.changes.end());
      all.lost = taken.lost;
    }
  }
  // Applies what the watch delivers until the mirror holds `store`'s last write.
  AgentWatch::Taken catch_up() {
    AgentWatch::Taken all;
    pump(all, [&] { return mirror.revision() < store.written_revision(); });
    return all;
  }
  // Applies what the watch delivers until the mirror equals a full read of its ranges: the
  // watches of different ranges deliver each in order, not in order with one another.
  AgentWatch::Taken catch_up_with_read() {
    AgentWatch::Taken all = catch_up();
    pump(all, [&] { return mirror.values() != store.list(ranges).values; });
    return all;
  }
  // Waits until the watch reports a loss (at most 10 s).
  std::string lost() {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd fd{wake.fd(), POLLIN, 0};
      ::poll(&fd, 1, 100);
      wake.drain();
      if (auto taken = watch.take(); taken.lost) return *taken.lost;
    }
    return "";
  }
  EtcdStore store;
  Wakeup wake;
  AgentWatch watch;
  KeyRanges ranges;
  JobMirror mirror;
};

}  // namespace

TEST_CASE("agent mirror: the watch's changes applied in revision order equal a full read") {
  std::string prefix = prefix_for("order");
  EtcdStore writer(options_for(prefix));
  writer.set("agents/a", "slots=1 workers=");
  writer.set("agents/b", "slots=1 workers=");
  Reader reader(prefix);
  CHECK(reader.mirror.values() == reader.store.list("").values);
  reader.store.set("agents/a", "slots=1 workers=a.0.0");
  reader.store.set("agents/a", "slots=2 workers=a.0.0");  // the later value wins
  reader.store.remove("agents/b");                        // a delete
  reader.store.set("agents/c", "slots=1 workers=");
  auto taken = reader.catch_up();
  CHECK_FALSE(taken.lost);
  REQUIRE(taken.changes.size() == 4);
  for (size_t i = 1; i < taken.changes.size(); ++i) {
    CHECK(taken.changes[i - 1].revision < taken.changes[i].revision);
  }
  CHECK(reader.mirror.values() ==
        Values{{"agents/a", "slots=2 workers=a.0.0"}, {"agents/c", "slots=1 workers="}});
  CHECK(reader.mirror.values() == reader.store.list("").values);
  CHECK(reader.mirror.revision() == reader.store.written_revision());

  // The same changes again (a watch asked again from before them) change nothing.
  reader.mirror.apply(taken.changes);
  CHECK(reader.mirror.values() == reader.store.list("").values);
}

TEST_CASE("agent mirror: a forged value in an event is refused as a full read refuses it") {
  std::string prefix = prefix_for("forged");
  EtcdStore writer(options_for(prefix));
  writer.set("agents/a", "slots=1 workers=");
  Reader reader(prefix);
  put_raw(prefix + "agents/a", "slots=9 workers=");  // over a sealed value: as if deleted
  put_raw(prefix + "agents/x", "slots=9 workers=");  // a new key: as if not there
  // Sealed with another secret, and sealed for another key.
  put_raw(prefix + "agents/y", seal_value(std::string(32, 'x'), prefix + "agents/y", "slots=1"));
  put_raw(prefix + "agents/z", seal_value(kSecret, prefix + "agents/b", "slots=1 workers="));
  reader.store.set("agents/b", "slots=1 workers=");  // after them all
  auto taken = reader.catch_up();
  CHECK_FALSE(taken.lost);
  CHECK(taken.changes.size() == 5);
  CHECK(reader.mirror.values() == Values{{"agents/b", "slots=1 workers="}});
  CHECK(reader.mirror.values() == reader.store.list("").values);
}

TEST_CASE("agent mirror: a compacted history makes the watch ask for a full read") {
  std::string prefix = prefix_for("compacted");
  Reader reader(prefix);
  int64_t old = reader.mirror.revision();
  reader.store.set("agents/a", "slots=1 workers=");
  reader.store.set("agents/a", "slots=2 workers=");
  EtcdClient raw({.endpoints = {testing::etcd_server().endpoint()}});
  raw.call("/v3/kv/compaction", {{"revision", std::to_string(reader.store.written_revision())}});
  reader.watch.watch_after(old,
                           reader.ranges);  // as after a restart of the watch from the old revision
  CHECK_THAT(reader.lost(), Contains("compacted"));
  // A full read, and the watch from its revision, bring the mirror back.
  auto listing = reader.store.list("");
  int64_t revision = listing.revision;
  reader.mirror.replace(std::move(listing), reader.ranges);
  reader.watch.watch_after(revision, reader.ranges);
  reader.store.set("agents/b", "slots=1 workers=");
  CHECK_FALSE(reader.catch_up().lost);
  CHECK(reader.mirror.values() == reader.store.list("").values);
  CHECK(reader.mirror.values().size() == 2);
}

TEST_CASE("agent mirror: etcd's revision below the one read makes the watch ask for a full read") {
  // What an etcd restarted without its data shows: it counts revisions anew.
  std::string prefix = prefix_for("restarted");
  Reader reader(prefix);
  reader.watch.watch_after(reader.mirror.revision() + 1'000'000, reader.ranges);
  CHECK_THAT(reader.lost(), Contains("etcd lost its data"));
}

TEST_CASE("agent ranges: an agent that does not plan is sent only the keys it acts on") {
  std::string prefix = prefix_for("follower");
  EtcdStore writer(options_for(prefix));
  writer.set("agents/a", "slots=1 workers=a.0.0");
  writer.set("agents/b", "slots=1 workers=b.0.0");
  Reader follower(prefix, follower_ranges("b"));
  CHECK_FALSE(holds_every_checkin(follower.mirror.ranges()));
  CHECK_FALSE(holds_every_node(follower.mirror.ranges()));
  std::string checkin = format_checkin({});
  writer.set("agents/a", "slots=2 workers=a.0.0 a.1.0");  // another node's record changes
  writer.set("lead", "a");                                // a leads
  writer.set("elastic/checkin/a.0.0/0", checkin);         // another node's worker checks in
  writer.set("elastic/assign/a.0.0/0", "x");              // and is assigned
  writer.set("elastic/assign/b.0.0/0", "x");              // this node's assignment, written by it
  writer.set("elastic/world/0/a.0.0", "x");               // the workers' data plane
  writer.set("names/a", "1");
  writer.set("rounds/0", "generation=0\na.0.0 a 0\nb.0.0 b 0");
  follower.store.set("elastic/checkin/b.0.0/0", checkin);  // its own worker checks in: the last
  auto taken = follower.catch_up_with_read();
  CHECK_FALSE(taken.lost);
  std::set<std::string> keys;
  for (const auto& change : taken.changes) keys.insert(change.key);
  CHECK(keys == std::set<std::string>{"lead", "rounds/0", "elastic/checkin/b.0.0/0"});
  CHECK(follower.mirror.values() == follower.store.list(follower.ranges).values);
  // It never reads a key it does not watch from its mirror.
  CHECK_THROWS_AS(follower.mirror.value("elastic/checkin/a.0.0/0"), InternalError);
  CHECK(follower.mirror.value("elastic/checkin/b.0.0/0") == checkin);
  auto snapshot = parse_agent_snapshot(follower.mirror.values());
  CHECK(snapshot.view.checkins.size() == 1);
  // Only its own node's record: the round's members reach it in the round's record.
  CHECK(snapshot.view.nodes.size() == 1);
  CHECK(snapshot.view.nodes.contains("b"));
  CHECK(snapshot.view.last_round->members.size() == 2);
  // a leads: a plans, b does not unless it is planning a round already.
  REQUIRE(snapshot.lead == "a");
  CHECK(plans_rounds(snapshot.lead, "a", false));
  CHECK_FALSE(plans_rounds(snapshot.lead, "b", false));
  CHECK(plans_rounds(snapshot.lead, "b", true));
  CHECK_FALSE(plans_rounds(std::nullopt, "b", false));
}

TEST_CASE("agent ranges: an agent that comes to plan reads every check-in before it acts") {
  std::string prefix = prefix_for("planner");
  EtcdStore writer(options_for(prefix));
  writer.set("agents/b", "slots=1 workers=b.0.0");
  writer.set("agents/c", "slots=1 workers=c.0.0");
  Reader reader(prefix, follower_ranges("b"));
  writer.set("elastic/checkin/c.0.0/0", format_checkin({}));
  // b takes the lead (Agent::take_lead): a key under its lease, that another cannot take.
  EtcdLease lease(options_for(prefix).etcd, 10s, [](const std::string&) {});
  REQUIRE(reader.store.create(lead_key(), "b", lease.id()));
  CHECK_FALSE(writer.create(lead_key(), "c", 0));
  reader.catch_up_with_read();
  auto snapshot = parse_agent_snapshot(reader.mirror.values());
  REQUIRE(plans_rounds(snapshot.lead, "b", false));
  auto view = snapshot.view;
  CHECK_FALSE(view.checkins.contains("c.0.0"));  // what it read so far is no base for a plan
  CHECK_FALSE(view.nodes.contains("c"));
  // What Agent::follow_planning does: a full read of every key, then the watch of them all.
  auto listing = reader.store.list(planner_ranges());
  int64_t revision = listing.revision;
  reader.ranges = planner_ranges();
  reader.mirror.replace(std::move(listing), reader.ranges);
  reader.watch.watch_after(revision, reader.ranges);
  CHECK(holds_every_checkin(reader.mirror.ranges()));
  CHECK(holds_every_node(reader.mirror.ranges()));
  CHECK(parse_agent_snapshot(reader.mirror.values()).view.checkins.contains("c.0.0"));
  CHECK(parse_agent_snapshot(reader.mirror.values()).view.nodes.contains("c"));
  writer.set("elastic/checkin/b.0.0/0", format_checkin({}));
  reader.store.set("exits/b.9.8", "0");
  CHECK_FALSE(reader.catch_up_with_read().lost);
  CHECK(parse_agent_snapshot(reader.mirror.values()).view.checkins.size() == 2);
  // Back to following: it keeps what it acts on, as current as it was.
  reader.mirror.narrow(follower_ranges("b"));
  CHECK(reader.mirror.values() == reader.store.list(follower_ranges("b")).values);
  CHECK_THROWS_AS(reader.mirror.narrow(planner_ranges()), InternalError);
  // b gives the lead up (Agent::release_lead): only the lead it holds, never another's.
  CHECK_FALSE(writer.remove_if_holds(lead_key(), "c"));
  CHECK(reader.store.remove_if_holds(lead_key(), "b"));
  CHECK_FALSE(reader.store.lookup(lead_key()));
}

TEST_CASE("agent mirror: it holds changes key by key as its ranges' watches deliver them") {
  // The watches of different ranges deliver each in order, not in order with one another: a
  // later change of one range may come before an earlier change of another.
  JobMirror mirror;
  mirror.replace({.values = {}, .revision = 10}, follower_ranges("b"));
  mirror.apply({{.key = "elastic/checkin/b.0.0/0", .value = "x", .revision = 12}});
  CHECK(mirror.revision() == 12);
  CHECK_FALSE(mirror.holds_change("agents/b", 11));  // its watch has not delivered it yet
  CHECK(mirror.holds_change("elastic/checkin/b.0.0/0", 12));
  CHECK(mirror.holds_change("agents/b", 9));  // in the read
  CHECK(mirror.holds_change("names/a", 11));  // a key it does not read
  mirror.apply({{.key = "agents/b", .value = "slots=1 workers=", .revision = 11}});
  CHECK(mirror.holds_change("agents/b", 11));
  CHECK(mirror.value("agents/b") == "slots=1 workers=");
  // The same change again (a watch asked again from an earlier revision) changes nothing.
  mirror.apply({{.key = "agents/b", .value = std::nullopt, .revision = 11}});
  CHECK(mirror.value("agents/b") == "slots=1 workers=");
}

TEST_CASE("agent ranges: a starting agent reads what names its node's workers, not the others'") {
  std::string prefix = prefix_for("startup");
  EtcdStore writer(options_for(prefix));
  writer.set("agents/a", "slots=1 workers=a.0.7");
  writer.set("agents/b", "slots=2 workers=b.0.3 b.1.0");
  writer.set("elastic/assign/b.0.4/0", "x");  // a worker of b's that was assigned, then went
  writer.set("elastic/checkin/a.0.7/0", format_checkin({}));
  writer.set("rounds/0", "generation=0\na.0.7 a 0\nb.0.2 b 0");
  auto listing = writer.list(startup_ranges("b"));
  CHECK_FALSE(listing.values.contains("agents/a"));
  CHECK_FALSE(listing.values.contains("elastic/checkin/a.0.7/0"));
  // Its next workers take ids that no earlier agent of b gave: slot 0 from 5, slot 1 from 1.
  CHECK(first_spawns(listing.values, "b") == std::map<int, int>{{0, 5}, {1, 1}});
  // What it reads first holds what it then follows.
  JobMirror mirror;
  mirror.replace(std::move(listing), follower_ranges("b"));
  CHECK(mirror.values() == writer.list(follower_ranges("b")).values);
}
