// JobMetrics from a sequence of events, as the launchers emit them: the exposition's samples, the
// histogram's cumulative buckets and the label escaping. promtool checks real files end to end
// (the elastic event_log test).
#include "launcher/job_metrics.h"

#include <catch2/catch.hpp>

using namespace cohort::discovery;
using nlohmann::json;

namespace {

// The value of the one sample line that starts with `series` ("name{labels}").
std::string value_of(const std::string& text, const std::string& series) {
  size_t at = text.find("\n" + series + " ");
  REQUIRE(at != std::string::npos);
  size_t start = at + series.size() + 2;
  return text.substr(start, text.find('\n', start) - start);
}

}  // namespace

TEST_CASE("job metrics: rounds, resets by cause, workers, slots and blacklisting") {
  JobMetrics m("j1", "");
  m.observe("job_start", {{"launcher", "elastic"}});
  m.observe("slots_changed", {{"added", {"a:0", "a:1", "b:0"}}, {"removed", json::array()}});
  for (int i = 0; i < 3; ++i) m.observe("worker_start", {{"worker", i}});
  m.observe("round", {{"round", 0}, {"size", 3}, {"cause", "start"}});
  m.observe("worker_timeout", {{"worker", 2}, {"timeout", "checkin"}});  // its exit counts it
  m.observe("worker_exit", {{"worker", 2}, {"verdict", "failed"}});
  m.observe("worker_exit", {{"worker", 1}, {"verdict", "stopped"}});
  m.observe("blacklist", {{"host", "b"}, {"slot", nullptr}, {"failures", 1}});
  m.observe("slots_changed", {{"added", json::array()}, {"removed", {"b:0"}}});
  m.observe("round", {{"round", 1}, {"size", 2}, {"cause", "failure"}, {"recovery_seconds", 0.2}});
  std::string t = m.text();
  CHECK(value_of(t, "cohort_job_info{job=\"j1\",launcher=\"elastic\"}") == "1");
  CHECK(value_of(t, "cohort_world_size{job=\"j1\"}") == "2");
  CHECK(value_of(t, "cohort_rounds_total{job=\"j1\"}") == "2");
  CHECK(value_of(t, "cohort_resets_total{job=\"j1\",cause=\"failure\"}") == "1");
  CHECK(value_of(t, "cohort_resets_total{job=\"j1\",cause=\"drain\"}") == "0");
  CHECK(value_of(t, "cohort_workers_started_total{job=\"j1\"}") == "3");
  CHECK(value_of(t, "cohort_workers_failed_total{job=\"j1\"}") == "1");
  CHECK(value_of(t, "cohort_usable_slots{job=\"j1\"}") == "2");
  CHECK(value_of(t, "cohort_blacklisted_hosts{job=\"j1\"}") == "1");
  m.observe("slots_changed", {{"added", {"b:0"}}, {"removed", json::array()}});  // cooldown ended
  CHECK(value_of(m.text(), "cohort_blacklisted_hosts{job=\"j1\"}") == "0");
  CHECK(t.find("cohort_commits_total") == std::string::npos);  // no report from rank 0 yet
  m.progress(40, 960);
  CHECK(value_of(m.text(), "cohort_samples_committed_total{job=\"j1\"}") == "960");
}

TEST_CASE("job metrics: the recovery histogram's buckets are cumulative") {
  JobMetrics m("j", "n");
  for (double s : {0.005, 0.2, 0.2, 7.0, 100.0}) {
    m.observe("round", {{"round", 1}, {"size", 1}, {"cause", "failure"}, {"recovery_seconds", s}});
  }
  std::string t = m.text();
  std::string labels = "job=\"j\",node=\"n\"";
  CHECK(value_of(t, "cohort_recovery_seconds_bucket{" + labels + ",le=\"0.01\"}") == "1");
  CHECK(value_of(t, "cohort_recovery_seconds_bucket{" + labels + ",le=\"0.25\"}") == "3");
  CHECK(value_of(t, "cohort_recovery_seconds_bucket{" + labels + ",le=\"10\"}") == "4");
  CHECK(value_of(t, "cohort_recovery_seconds_bucket{" + labels + ",le=\"30\"}") == "4");
  CHECK(value_of(t, "cohort_recovery_seconds_bucket{" + labels + ",le=\"+Inf\"}") == "5");
  CHECK(value_of(t, "cohort_recovery_seconds_count{" + labels + "}") == "5");
  CHECK(value_of(t, "cohort_recovery_seconds_sum{" + labels + "}") == "107.405");
}

TEST_CASE("job metrics: label values are escaped") {
  JobMetrics m("a\"b\\c\nd", "");
  CHECK(m.text().find("job=\"a\\\"b\\\\c\\nd\"") != std::string::npos);
}
