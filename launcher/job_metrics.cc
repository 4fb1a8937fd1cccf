#include "launcher/job_metrics.h"

#include <array>
#include <charconv>
#include <cstring>

#include "cohort/errors.h"

namespace cohort::discovery {
namespace {

using nlohmann::json;

// Seconds from the event that made a round necessary to its publication: from a reset that
// regroups at once to one that waits for stragglers or --checkin-timeout.
constexpr std::array<double, 10> kRecoveryBounds = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

// A label value with \, " and newline escaped, as the text format wants.
std::string escaped(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

// The shortest text that reads back as `v`: "0.05", not "0.050000000000000003".
std::string number(double v) {
  char text[32];
  auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return std::string(text, ec == std::errc() ? end : text);
}

// One metric family: its HELP, its TYPE and its samples.
struct Family {
  std::string text;
  Family(const std::string& name, const char* type, const char* help) {
    text = "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const std::string& name, const std::string& labels, double value) {
    text += name + "{" + labels + "} " + number(value) + "\n";
  }
};

std::string host_of(const std::string& slot) {
  return slot.substr(0, slot.rfind(':'));
}

}  // namespace

JobMetrics::JobMetrics(std::string job_id, std::string node)
    : recovery_buckets_(kRecoveryBounds.size(), 0) {
  labels_ = "job=\"" + escaped(job_id) + "\"";
  if (!node.empty()) labels_ += ",node=\"" + escaped(node) + "\"";
}

void JobMetrics::observe(const std::string& event, const json& fields) {
  if (event == "job_start") {
    launcher_ = fields.value("launcher", "");
    if (fields.contains("np")) world_size_ = fields["np"].get<double>();
  } else if (event == "round") {
    observe_round(fields);
  } else if (event == "worker_start") {
    ++workers_started_;
  } else if (event == "worker_exit" && fields.value("verdict", "") == "failed") {
    ++workers_failed_;
  } else if (event == "blacklist") {
    ++blacklistings_;
    if (fields["slot"].is_null()) blacklisted_hosts_.insert(fields.value("host", ""));
  } else if (event == "drain") {
    ++drains_;
  } else if (event == "discovery_failure") {
    ++discovery_failures_;
  } else if (event == "slots_changed") {
    observe_slots(fields);
  }
}

void JobMetrics::observe_round(const json& fields) {
  ++rounds_;
  world_size_ = fields.value("size", 0.0);
  if (fields.value("round", 0) > 0) ++resets_[fields.value("cause", "unknown")];
  if (!fields.contains("recovery_seconds")) return;
  double seconds = fields["recovery_seconds"].get<double>();
  recovery_sum_ += seconds;
  ++recovery_count_;
  for (size_t i = 0; i < kRecoveryBounds.size(); ++i) {
    if (seconds <= kRecoveryBounds[i]) ++recovery_buckets_[i];
  }
}

void JobMetrics::observe_slots(const json& fields) {
  for (const auto& s : fields["removed"]) usable_slots_.erase(s.get<std::string>());
  for (const auto& s : fields["added"]) {
    usable_slots_.insert(s.get<std::string>());
    blacklisted_hosts_.erase(host_of(s.get<std::string>()));  // its cooldown ended
  }
}

void JobMetrics::progress(uint64_t commits, uint64_t samples) {
  commits_ = static_cast<double>(commits);
  samples_ = static_cast<double>(samples);
  progress_seen_ = true;
}

std::string JobMetrics::text() const {
  std::string out;
  auto one = [&](const std::string& name, const char* type, const char* help, double v) {
    Family f(name, type, help);
    f.sample(name, labels_, v);
    out += f.text;
  };
  Family info("cohort_job_info", "gauge", "The job this launcher runs; always 1.");
  info.sample("cohort_job_info", labels_ + ",launcher=\"" + escaped(launcher_) + "\"", 1);
  out += info.text;
  one("cohort_world_size", "gauge", "Workers in the current round.", world_size_);
  one("cohort_rounds_total", "counter", "Rounds published, the first included.", rounds_);
  out += resets_text() + recovery_text();
  one("cohort_usable_slots", "gauge", "Slots that can take a worker now.",
      static_cast<double>(usable_slots_.size()));
  one("cohort_blacklisted_hosts", "gauge", "Hosts blacklisted now (their cooldown has not ended).",
      static_cast<double>(blacklisted_hosts_.size()));
  one("cohort_blacklistings_total", "counter", "Slots retired and hosts blacklisted by failures.",
      blacklistings_);
  one("cohort_workers_started_total", "counter", "Worker processes started.", workers_started_);
  one("cohort_workers_failed_total", "counter",
      "Workers that failed unasked (status not 0, or a signal) or were killed for a timeout.",
      workers_failed_);
  one("cohort_drains_total", "counter", "Hosts that began draining.", drains_);
  one("cohort_discovery_failures_total", "counter",
      "Failed runs of the discovery script, once per streak of the same error.",
      discovery_failures_);
  if (!progress_seen_) return out;
  one("cohort_commits_total", "counter", "State commits of the job, as rank 0 last reported.",
      commits_);
  one("cohort_samples_committed_total", "counter",
      "Samples the elastic samplers committed, all epochs, as rank 0 last reported.", samples_);
  return out;
}

std::string JobMetrics::resets_text() const {
  Family f("cohort_resets_total", "counter", "Rounds after the first, by what caused them.");
  for (const char* cause :
       {"failure", "worker_left", "worker_finished", "hosts_changed", "drain"}) {
    auto it = resets_.find(cause);
    f.sample("cohort_resets_total", labels_ + ",cause=\"" + cause + "\"",
             it == resets_.end() ? 0 : it->second);
  }
  return f.text;
}

std::string JobMetrics::recovery_text() const {
  Family f("cohort_recovery_seconds", "histogram",
           "From the event that made a new round necessary to its publication.");
  for (size_t i = 0; i < kRecoveryBounds.size(); ++i) {  // each bucket counts all up to its bound
    f.sample("cohort_recovery_seconds_bucket",
             labels_ + ",le=\"" + number(kRecoveryBounds[i]) + "\"", recovery_buckets_[i]);
  }
  f.sample("cohort_recovery_seconds_bucket", labels_ + ",le=\"+Inf\"", recovery_count_);
  f.sample("cohort_recovery_seconds_sum", labels_, recovery_sum_);
  f.sample("cohort_recovery_seconds_count", labels_, recovery_count_);
  return f.text;
}

}  // namespace cohort::discovery
