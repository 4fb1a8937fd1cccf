// The launcher's side of the workers' reports (launcher/worker_report_log.h) and of the rounds'
// causes (launcher/round_cause.h), which both elastic modes share: what reaches the event log and
// the metrics, once, and what is refused.
#include "launcher/worker_report_log.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <vector>

#include "launcher/round_cause.h"
#include "test/common/captured_stderr.h"

using namespace cohort::discovery;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string name = (fs::temp_directory_path() / "worker_report_log_test.XXXXXX").string();
    REQUIRE(::mkdtemp(name.data()) != nullptr);
    path = name;
  }
  ~TempDir() { fs::remove_all(path); }
};

std::vector<json> events_in(const fs::path& file) {
  std::vector<json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

std::string text_of(const fs::path& file) {
  std::ifstream in(file);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("worker reports: each reset once as an event and the progress as metrics") {
  TempDir dir;
  cohort::testing::CapturedStderr err;
  JobEvents events({.event_log = (dir.path / "events").string(),
                    .metrics_file = (dir.path / "metrics").string(),
                    .job_id = "j"});
  WorkerReportLog log(events);
  std::string report =
      "round=2 old_rank=1 old_size=3 new_rank=0 new_size=2 teardown_us=1500 assignment_us=2000 "
      "connect_us=500";
  log.reset("a.0.0", 2, report);
  log.reset("a.0.0", 2, report);  // read again at the next look: no second event
  CHECK(log.has_reset("a.0.0", 2));
  CHECK_FALSE(log.has_reset(7, 2));
  log.reset(7, 1, "round=one");  // refused, and not asked about again
  CHECK(log.has_reset(7, 1));
  log.progress("commits=40 samples=960");
  log.progress("commits=forty");
  auto lines = events_in(dir.path / "events");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["event"] == "reset");
  CHECK(lines[0]["worker"] == "a.0.0");
  CHECK(lines[0]["round"] == 2);
  CHECK(lines[0]["teardown_seconds"] == 0.0015);
  std::string metrics = text_of(dir.path / "metrics");
  CHECK(metrics.find("cohort_commits_total{job=\"j\"} 40\n") != std::string::npos);
  CHECK(metrics.find("cohort_samples_committed_total{job=\"j\"} 960\n") != std::string::npos);
  CHECK(err.text().find("ignoring worker 7's reset report") != std::string::npos);
  CHECK(err.text().find("ignoring rank 0's progress") != std::string::npos);
}

TEST_CASE("worker reports: each restore from a checkpoint once as an event, never counted back") {
  TempDir dir;
  JobEvents events({.event_log = (dir.path / "events").string(), .job_id = "j"});
  WorkerReportLog log(events);
  log.progress("commits=40 samples=960");
  log.progress("commits=30 samples=720 restores=1 restored_sequence=3 restored_commit=28");
  log.progress("commits=31 samples=744 restores=1 restored_sequence=3 restored_commit=28");
  log.progress("commits=32 samples=768");  // a rank 0 that joined after the restore
  log.progress("commits=20 samples=480 restores=2 restored_sequence=2 restored_commit=19");
  auto lines = events_in(dir.path / "events");
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["event"] == "checkpoint_restore");
  CHECK(lines[0]["restores"] == 1);
  CHECK(lines[0]["sequence"] == 3);
  CHECK(lines[0]["commit"] == 28);
  CHECK(lines[1]["restores"] == 2);
  CHECK(lines[1]["sequence"] == 2);
  CHECK(lines[1]["commit"] == 19);
}

TEST_CASE("round cause: the first cause counts but a member that left gives way") {
  RoundCause cause;
  TimePoint t0{};
  json first = cause.take(t0);
  CHECK(first == json{{"cause", "start"}, {"reason", "the first round"}});
  cause.note("worker_left", "w left", t0);
  cause.note("failure", "w failed", t0 + std::chrono::milliseconds(100));
  cause.note("drain", "v drained", t0 + std::chrono::milliseconds(200));
  json next = cause.take(t0 + std::chrono::milliseconds(500));
  CHECK(next["cause"] == "failure");
  CHECK(next["reason"] == "w failed");
  CHECK(next["recovery_seconds"] == Approx(0.5));  // from the first note
  json none = cause.take(t0 + std::chrono::seconds(1));
  CHECK(none == json{{"cause", ""}, {"reason", ""}});
}
