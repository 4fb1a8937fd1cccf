#include "elastic/reports.h"

#include "base/log.h"
#include "cohort/errors.h"
#include "rendezvous/worker_reports.h"

namespace cohort::elastic::detail {
namespace {

// Often enough for a metrics scrape, rarely enough to cost nothing next to a commit.
constexpr std::chrono::seconds kProgressInterval{1};

void send(rendezvous::Store& store, const std::string& key, const std::string& value) {
  try {
    store.set(key, value);
  } catch (const Error& e) {
    log::limited(log::Level::kWarning, "worker-report", "cannot report '", key,
                 "' to the launcher (", e.what(), "); its metrics miss it");
  }
}

}  // namespace

void report_progress(Session& session, int rank, const State& state, bool now) {
  auto time = std::chrono::steady_clock::now();
  // During an outage of etcd rank 0's host check already waits on it at every commit; the
  // progress is reported once it answers again.
  if (rank != 0 || session.unreachable_since) return;
  if (!now && session.progress_sent_at && time - *session.progress_sent_at < kProgressInterval) {
    return;
  }
  session.progress_sent_at = time;
  rendezvous::Progress progress{.commits = state.commit_count(),
                                .samples = state.samples_committed(),
                                .restores = session.restores.count,
                                .restored_sequence = session.restores.sequence,
                                .restored_commit = session.restores.commit};
  send(*session.notices, rendezvous::progress_key(), rendezvous::format_progress(progress));
}

void report_reset(Session& session, const std::string& worker_id) {
  const ResetTimings& t = session.last_reset;
  auto us = [](std::chrono::microseconds d) { return static_cast<uint64_t>(d.count()); };
  rendezvous::ResetReport report{.round = t.round,
                                 .old_rank = t.old_rank,
                                 .old_size = t.old_size,
                                 .new_rank = t.new_rank,
                                 .new_size = t.new_size,
                                 .teardown_us = us(t.teardown),
                                 .assignment_us = us(t.assignment),
                                 .connect_us = us(t.connect)};
  send(*session.launcher, rendezvous::reset_report_key(worker_id, session.entry),
       rendezvous::format_reset_report(report));
}

}  // namespace cohort::elastic::detail
