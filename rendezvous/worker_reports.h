// What elastic workers report to their launcher, beside the check-ins of elastic_protocol.h, for
// its event log and metrics (launcher/worker_report_log.h): to cohortrun's server, or on etcd to
// the agents, which read them under the job's prefix (sealed with the job secret like every other
// value there). Both are plain SETs in the elastic scope, best effort: a report that cannot be
// written is skipped, never a failure of the worker.
//
//   rank 0:       SET progress = Progress          (at a commit, at most once a second, and at
//                                                  once after a restore from a checkpoint)
//   every worker: SET reset/<id>/<n> = ResetReport (once it has joined its n-th round, n >= 1)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cohort::rendezvous {

std::string progress_key();
std::string reset_report_key(std::string_view worker_id, int entry);

struct Progress {
  uint64_t commits = 0;  // State commits so far in the job
  uint64_t samples = 0;  // samples the State's elastic samplers have committed, all epochs
  // How often elastic::run restored the State from a durable checkpoint (committed state was
  // lost), and the last such checkpoint's sequence number and commit.
  uint64_t restores = 0;
  uint64_t restored_sequence = 0;
  uint64_t restored_commit = 0;
  bool operator==(const Progress&) const = default;
};

// "commits=40 samples=960", and after a restore "... restores=1 restored_sequence=3
// restored_commit=28" (the three together or none).
std::string format_progress(const Progress& progress);
// Throws InvalidArgument naming what is wrong.
Progress parse_progress(std::string_view text);

// A worker's last reset (cohort::elastic::ResetTimings), durations in microseconds.
struct ResetReport {
  int round = 0;
  int old_rank = 0, old_size = 0, new_rank = 0, new_size = 0;
  uint64_t teardown_us = 0, assignment_us = 0, connect_us = 0;
  bool operator==(const ResetReport&) const = default;
};

// "round=3 old_rank=2 old_size=4 new_rank=1 new_size=3 teardown_us=812 assignment_us=40211
// connect_us=9120".
std::string format_reset_report(const ResetReport& report);
// Throws InvalidArgument naming what is wrong.
ResetReport parse_reset_report(std::string_view text);

}  // namespace cohort::rendezvous
