// The reports an elastic worker sends its launcher for the event log and metrics
// (rendezvous/worker_reports.h): rank 0's progress at commits, and every worker's reset timings.
// Best effort: a report that cannot be sent is logged once and skipped.
#pragma once

#include "cohort/elastic/state.h"
#include "elastic/session.h"

namespace cohort::elastic::detail {

// Rank 0: the job's commits and committed samples, and its restores from checkpoints, at most once
// a second unless `now`.
void report_progress(Session& session, int rank, const State& state, bool now = false);

// This worker's reset into its session's round (session.last_reset).
void report_reset(Session& session, const std::string& worker_id);

}  // namespace cohort::elastic::detail
