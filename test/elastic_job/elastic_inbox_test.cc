// ElasticInbox: what the rendezvous server's hook files is what the launcher's loop takes, once.
#include <poll.h>

#include <catch2/catch.hpp>
#include <thread>

#include "elastic_job/elastic_inbox.h"
#include "rendezvous/elastic_protocol.h"
#include "rendezvous/worker_reports.h"

using namespace cohort::discovery;
namespace rdv = cohort::rendezvous;

namespace {

bool readable(const ElasticInbox& inbox) {
  pollfd p{.fd = inbox.fd(), .events = POLLIN};
  return ::poll(&p, 1, 0) == 1;
}

}  // namespace

TEST_CASE("the inbox files check-ins and reset reports in order and wakes the loop") {
  ElasticInbox inbox;
  CHECK_FALSE(readable(inbox));
  inbox.file(rdv::checkin_key("3", 0));
  inbox.file(rdv::reset_report_key("7", 2));
  inbox.file(rdv::checkin_key("12", 5));
  CHECK(readable(inbox));
  Arrivals got = inbox.take();
  CHECK_FALSE(readable(inbox));
  REQUIRE(got.checkins.size() == 2);
  CHECK((got.checkins[0].id == 3 && got.checkins[0].entry == 0));
  CHECK((got.checkins[1].id == 12 && got.checkins[1].entry == 5));
  REQUIRE(got.resets.size() == 1);
  CHECK((got.resets[0].id == 7 && got.resets[0].entry == 2));
  CHECK(inbox.take().checkins.empty());  // taken once
}

TEST_CASE("the inbox wakes for progress and ignores keys that are not a worker's report") {
  ElasticInbox inbox;
  for (const char* key : {"assign/1/0", "notice/3", "checkin/x/0", "checkin/1", "checkin/01/0",
                          "checkin/1/0/extra", "checkin/-/0", "elsewhere"}) {
    inbox.file(key);
  }
  CHECK_FALSE(readable(inbox));
  inbox.file(rdv::progress_key());
  CHECK(readable(inbox));
  Arrivals got = inbox.take();
  CHECK(got.checkins.empty());
  CHECK(got.resets.empty());
}

TEST_CASE("the inbox takes what other threads file while it is read") {
  ElasticInbox inbox;
  const int n = 2000;
  std::thread server([&] {
    for (int i = 0; i < n; ++i) inbox.file(rdv::checkin_key(std::to_string(i), 0));
  });
  int taken = 0;
  while (taken < n) {
    pollfd p{.fd = inbox.fd(), .events = POLLIN};
    REQUIRE(::poll(&p, 1, 5000) == 1);  // every key filed wakes the loop until it is taken
    for (const auto& a : inbox.take().checkins) CHECK(a.id == taken++);
  }
  server.join();
}
