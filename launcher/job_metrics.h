// The launcher's metrics in the Prometheus text format (version 0.0.4), kept as a file that
// node_exporter's textfile collector reads (--metrics-file). They are derived from the events
// (job_events.h) as they happen, so every launcher has them, and rewritten after each: written to
// FILE.tmp, then renamed over FILE, so a reader never sees half a file. docs/operations.md lists
// every metric.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace cohort::discovery {

class JobMetrics {
 public:
  JobMetrics(std::string job_id, std::string node);

  // Updates the metrics from one event and its fields.
  void observe(const std::string& event, const nlohmann::json& fields);
  // Rank 0's report at a commit: commits and samples committed so far in the job.
  void progress(uint64_t commits, uint64_t samples);

  // The whole exposition, ending in a newline.
  std::string text() const;

 private:
  void observe_round(const nlohmann::json& fields);
  void observe_slots(const nlohmann::json& fields);
  std::string resets_text() const;
  std::string recovery_text() const;

  std::string labels_;  // job="...",node="..." for every sample
  std::string launcher_;
  double world_size_ = 0;
  double rounds_ = 0;
  std::map<std::string, double> resets_;  // by cause
  std::vector<double> recovery_buckets_;  // per bound of kRecoveryBounds: the values up to it
  double recovery_sum_ = 0, recovery_count_ = 0;
  double workers_started_ = 0, workers_failed_ = 0, blacklistings_ = 0, drains_ = 0;
  double discovery_failures_ = 0;
  std::set<std::string> usable_slots_;       // "host:slot"
  std::set<std::string> blacklisted_hosts_;  // whole hosts out until their slots return
  double commits_ = 0, samples_ = 0;
  bool progress_seen_ = false;
};

}  // namespace cohort::discovery
