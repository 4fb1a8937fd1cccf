// Agent mode's wait for an unreachable store (elastic_policy/store_outage.h), read by read on a
// fake clock with --elastic-timeout 60s.
#include <catch2/catch.hpp>

#include "elastic_policy/store_outage.h"
#include "test/elastic_policy/policy_fixture.h"

using namespace policy_test;

namespace {

struct Read {
  std::chrono::seconds at;
  enum { kUnreachable, kAnswered } outcome = kUnreachable;
  bool workers_running = false;
  bool began = false;  // expected: an outage began (unreachable) or ended (answered)
  bool stop = false;   // expected
};

}  // namespace

TEST_CASE("an agent waits for the store while its workers run then --elastic-timeout") {
  struct Row {
    const char* story;
    std::vector<Read> reads;
  };
  constexpr auto kAnswered = Read::kAnswered;
  auto row = GENERATE(Row{"no worker runs: 60s from the last answer (10s)",
                          {{.at = 10s, .outcome = kAnswered},
                           {.at = 15s, .began = true},
                           {.at = 69s},
                           {.at = 70s, .stop = true}}},
                      Row{"workers run: no limit, then 60s from the last seen running",
                          {{.at = 0s, .outcome = kAnswered},
                           {.at = 5s, .workers_running = true, .began = true},
                           {.at = 500s, .workers_running = true},
                           {.at = 559s},
                           {.at = 560s, .stop = true}}},
                      Row{"an answer ends the outage; the next one counts afresh",
                          {{.at = 0s, .outcome = kAnswered},
                           {.at = 5s, .began = true},
                           {.at = 50s, .outcome = kAnswered, .began = true},
                           {.at = 55s, .began = true},
                           {.at = 109s},
                           {.at = 110s, .stop = true}}},
                      Row{"an answer with no outage ends none",
                          {{.at = 0s, .outcome = kAnswered}, {.at = 1s, .outcome = kAnswered}}});
  CAPTURE(row.story);
  StoreOutage outage(60s);
  TimePoint last_answer{};
  for (const auto& read : row.reads) {
    CAPTURE(read.at.count());
    TimePoint now = TimePoint{} + read.at;
    if (read.outcome == Read::kAnswered) {
      CHECK(outage.answered() == read.began);
      CHECK_FALSE(outage.ongoing());
      last_answer = now;
      continue;
    }
    auto verdict = outage.unreachable(last_answer, read.workers_running, now);
    CHECK(verdict.began == read.began);
    CHECK(verdict.stop == read.stop);
    CHECK(outage.ongoing());
  }
}
