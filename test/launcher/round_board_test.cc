// The launcher's side of the elastic protocol (launcher/round_board.h), as both elastic modes use
// it: over the built-in server's elastic scope, and over a scope of a larger store (agent mode's
// etcd, through rendezvous/scoped_store.h), where the same keys land under "elastic/".
#include "launcher/round_board.h"

#include <catch2/catch.hpp>
#include <map>

#include "cohort/errors.h"
#include "rendezvous/scoped_store.h"

namespace {

using namespace cohort;
using namespace cohort::discovery;
using Kind = BoardKey::Kind;

// A store in memory: what a Store holds, and nothing else.
class MemoryStore final : public rendezvous::Store {
 public:
  std::map<std::string, std::string> values;

  void set(const std::string& key, const std::string& value, const Cancellation*) override {
    values[key] = value;
  }
  std::string get(const std::string& key, std::chrono::milliseconds, const Cancellation*) override {
    return values.at(key);
  }
  std::optional<std::string> lookup(const std::string& key, const Cancellation*) override {
    auto it = values.find(key);
    return it == values.end() ? std::nullopt : std::optional(it->second);
  }
  bool compare_and_set(const std::string& key, const std::optional<std::string>& expected,
                       const std::string& desired, const Cancellation*) override {
    auto now = lookup(key, nullptr);
    if (now == desired) return true;
    if (now != expected) return false;
    values[key] = desired;
    return true;
  }
  bool remove(const std::string& key, const Cancellation*) override {
    return values.erase(key) > 0;
  }
  std::string describe() const override { return "memory"; }
};

}  // namespace

TEST_CASE("round board: agent mode writes the protocol's keys under the job's elastic scope") {
  MemoryStore job;
  rendezvous::ScopedStore elastic(job, rendezvous::kElasticScope);
  RoundBoard board(elastic);
  board.assign("a.0.0", 2, {.round = 3, .placement = Placement::from_hosts(0, {"a"})});
  board.tell_exit("b.1.0", 4);
  board.abandon(2, "worker b.0.0 failed");
  board.notice(5, "worker c.0.0 on c is ready to join");
  board.notice(5, "a second reason");  // a notice, once set, stays as it was
  CHECK(job.values == std::map<std::string, std::string>{
                          {"elastic/abandon/2", "worker b.0.0 failed"},
                          {"elastic/assign/a.0.0/2",
                           rendezvous::format_assignment(
                               {.round = 3, .placement = Placement::from_hosts(0, {"a"})})},
                          {"elastic/assign/b.1.0/4", "exit"},
                          {"elastic/notice/5", "worker c.0.0 on c is ready to join"}});
}

TEST_CASE("round board: the elastic job reads check-ins and reports by worker number") {
  MemoryStore scope;
  RoundBoard board(scope);
  CHECK_FALSE(board.checkin(7, 0, "worker 7"));
  scope.set(rendezvous::checkin_key("7", 0), rendezvous::format_checkin({}), nullptr);
  scope.set(rendezvous::checkin_key("7", 1), "nonsense", nullptr);
  CHECK(board.checkin(7, 0, "worker 7")->kind == rendezvous::CheckIn::Kind::kStart);
  CHECK(board.checkin(7, 1, "worker 7")->kind == rendezvous::CheckIn::Kind::kFailed);
  board.assign(7, 1, {.exit = true});
  board.notice(1);
  CHECK(scope.values.at("assign/7/1") == "exit");
  CHECK(scope.values.at("notice/1").empty());
  scope.set(rendezvous::progress_key(), "commits=4 samples=96", nullptr);
  CHECK(board.progress() == "commits=4 samples=96");
  CHECK_FALSE(board.reset_report(7, 1));
}

TEST_CASE("round board: parse_key names every key of the protocol and nothing else") {
  struct Row {
    std::string key;
    Kind kind;
    std::string worker;
    int number;
  };
  auto row =
      GENERATE(Row{rendezvous::checkin_key("a.0.0", 3), Kind::kCheckIn, "a.0.0", 3},
               Row{rendezvous::assign_key("7", 0), Kind::kAssignment, "7", 0},
               Row{rendezvous::notice_key(12), Kind::kNotice, "", 12},
               Row{rendezvous::abandon_key(4), Kind::kAbandon, "", 4},
               Row{rendezvous::progress_key(), Kind::kProgress, "", 0},
               Row{rendezvous::reset_report_key("b.1.2", 5), Kind::kResetReport, "b.1.2", 5});
  auto parsed = RoundBoard::parse_key(row.key);
  REQUIRE(parsed);
  CHECK(parsed->kind == row.kind);
  CHECK(parsed->worker == row.worker);
  CHECK(parsed->number == row.number);
  for (const char* other : {"round/1/rank_0", "checkins/a/1", "progress/1", "notice"}) {
    CHECK_FALSE(RoundBoard::parse_key(other));
  }
}

TEST_CASE("round board: a malformed key of the protocol is refused naming its shape") {
  auto key = GENERATE("checkin/a.0.0", "checkin//1", "reset/b.0.0/x", "notice/x", "abandon/",
                      "assign/a/007");
  CHECK_THROWS_AS(RoundBoard::parse_key(key), InvalidArgument);
}
