#include "rendezvous/elastic_protocol.h"
#include "rendezvous/worker_reports.h"

#include <catch2/catch.hpp>

#include "cohort/errors.h"

using namespace cohort;
using namespace cohort::rendezvous;
using Catch::Matchers::Contains;

TEST_CASE("elastic protocol: keys name the worker and its entry", "[elastic_protocol]") {
  CHECK(checkin_key("w3", 2) == "checkin/w3/2");
  CHECK(assign_key("w3", 0) == "assign/w3/0");
  CHECK(notice_key(5) == "notice/5");
  CHECK(round_scope(7) == "round/7");
}

TEST_CASE("elastic protocol: an assignment survives formatting", "[elastic_protocol]") {
  Assignment a{.round = 3,
               .placement = {.rank = 2,
                             .size = 4,
                             .local_rank = 1,
                             .local_size = 2,
                             .cross_rank = 1,
                             .cross_size = 2},
               .generation = 6};
  Assignment b = parse_assignment(format_assignment(a));
  CHECK_FALSE(b.exit);
  CHECK(b.round == 3);
  CHECK(b.placement.rank == 2);
  CHECK(b.placement.size == 4);
  CHECK(b.placement.local_rank == 1);
  CHECK(b.placement.local_size == 2);
  CHECK(b.placement.cross_rank == 1);
  CHECK(b.placement.cross_size == 2);
  CHECK(b.generation == 6);
  CHECK(parse_assignment(format_assignment({.exit = true})).exit);
}

TEST_CASE("elastic protocol: bad assignments are refused with the reason", "[elastic_protocol]") {
  std::string good = format_assignment({});
  CHECK_THROWS_WITH(parse_assignment("round=1"), Contains("rank is missing"));
  CHECK_THROWS_WITH(parse_assignment(good + " colour=red"), Contains("unknown field colour"));
  CHECK_THROWS_WITH(parse_assignment(good + " rank=0"), Contains("given twice"));
  CHECK_THROWS_WITH(parse_assignment("round=0 rank=4 size=4 local_rank=0 local_size=1 "
                                     "cross_rank=0 cross_size=1 generation=0"),
                    Contains("rank 4 is outside [0, 4)"));
  CHECK_THROWS_WITH(parse_assignment("round=x rank=0 size=1 local_rank=0 local_size=1 "
                                     "cross_rank=0 cross_size=1 generation=0"),
                    Contains("round is not a whole number"));
  CHECK_THROWS_AS(parse_assignment("garbage"), InvalidArgument);
  CHECK_THROWS_AS(parse_assignment(""), InvalidArgument);
}

TEST_CASE("elastic protocol: check-ins carry their kind and reason", "[elastic_protocol]") {
  CheckIn failed = parse_checkin(format_checkin(
      {.kind = CheckIn::Kind::kFailed, .reason = "control connection to rank 2 closed"}));
  CHECK(failed.kind == CheckIn::Kind::kFailed);
  CHECK(failed.reason == "control connection to rank 2 closed");
  CHECK(parse_checkin(format_checkin({})).kind == CheckIn::Kind::kStart);
  CHECK(parse_checkin("interrupted").kind == CheckIn::Kind::kInterrupted);
  CheckIn drained = parse_checkin(format_checkin({.kind = CheckIn::Kind::kDrained, .reason = "x"}));
  CHECK(drained.kind == CheckIn::Kind::kDrained);
  CHECK(format_checkin(drained) == "drained x");
  CHECK_THROWS_WITH(parse_checkin("hello"), Contains("does not start with"));
}

TEST_CASE("worker reports: progress and reset reports survive formatting", "[elastic_protocol]") {
  Progress p{.commits = 40, .samples = uint64_t{1} << 40};
  CHECK(format_progress(p) == "commits=40 samples=1099511627776");
  CHECK(parse_progress(format_progress(p)) == p);
  Progress restored{
      .commits = 41, .samples = 984, .restores = 2, .restored_sequence = 3, .restored_commit = 28};
  CHECK(format_progress(restored) ==
        "commits=41 samples=984 restores=2 restored_sequence=3 restored_commit=28");
  CHECK(parse_progress(format_progress(restored)) == restored);
  ResetReport r{.round = 3,
                .old_rank = 2,
                .old_size = 4,
                .new_rank = 1,
                .new_size = 3,
                .teardown_us = 812,
                .assignment_us = 40211,
                .connect_us = 9120};
  CHECK(parse_reset_report(format_reset_report(r)) == r);
  CHECK(reset_report_key("7", 2) == "reset/7/2");
}

TEST_CASE("worker reports: malformed ones are refused with the reason", "[elastic_protocol]") {
  CHECK_THROWS_WITH(parse_progress("commits=1"), Contains("no samples"));
  CHECK_THROWS_WITH(parse_progress("commits=1 samples=2 extra=3"), Contains("unknown fields"));
  CHECK_THROWS_WITH(parse_progress("commits=-1 samples=2"), Contains("not name=number"));
  CHECK_THROWS_WITH(parse_progress("commits=1 commits=1"), Contains("commits twice"));
  CHECK_THROWS_WITH(parse_progress("commits= samples=1"), Contains("not name=number"));
  CHECK_THROWS_WITH(parse_progress("commits=1 samples=2 restores=1"),
                    Contains("'restores' and the fields that go with it, not some of them"));
  CHECK_THROWS_WITH(parse_progress("commits=1 samples=2 restores=0 restored_sequence=1 "
                                   "restored_commit=1"),
                    Contains("restores=0 with a restored checkpoint"));
  CHECK_THROWS_WITH(parse_reset_report("round=99999999999 old_rank=0 old_size=1 new_rank=0 "
                                       "new_size=1 teardown_us=0 assignment_us=0 connect_us=0"),
                    Contains("too large"));
}
