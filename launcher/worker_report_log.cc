#include "launcher/worker_report_log.h"

#include "base/log.h"
#include "cohort/errors.h"

namespace cohort::discovery {
namespace {

std::string name_of(const nlohmann::json& worker) {
  return worker.is_string() ? worker.get<std::string>() : worker.dump();
}

}  // namespace

void WorkerReportLog::progress(const std::string& text) {
  rendezvous::Progress p;
  try {
    p = rendezvous::parse_progress(text);
  } catch (const InvalidArgument& e) {
    log::limited(log::Level::kWarning, "bad-progress", "ignoring rank 0's progress: ", e.what());
    return;
  }
  if (p == progress_) return;
  // A restore the launcher has not heard of: a rank 0 that joined later counts fewer, never more.
  if (p.restores > restores_) {
    restores_ = p.restores;
    events_.emit("checkpoint_restore", {{"restores", p.restores},
                                        {"sequence", p.restored_sequence},
                                        {"commit", p.restored_commit}});
  }
  progress_ = p;
  events_.progress(p.commits, p.samples);
}

bool WorkerReportLog::has_reset(const nlohmann::json& worker, int entry) const {
  return resets_.contains({name_of(worker), entry});
}

void WorkerReportLog::reset(const nlohmann::json& worker, int entry, const std::string& text) {
  if (!resets_.insert({name_of(worker), entry}).second) return;
  rendezvous::ResetReport r;
  try {
    r = rendezvous::parse_reset_report(text);
  } catch (const InvalidArgument& e) {
    log::warning("ignoring worker ", name_of(worker), "'s reset report: ", e.what());
    return;
  }
  auto seconds = [](uint64_t us) { return static_cast<double>(us) / 1e6; };
  events_.emit("reset", {{"worker", worker},
                         {"round", r.round},
                         {"old_rank", r.old_rank},
                         {"old_size", r.old_size},
                         {"new_rank", r.new_rank},
                         {"new_size", r.new_size},
                         {"teardown_seconds", seconds(r.teardown_us)},
                         {"assignment_seconds", seconds(r.assignment_us)},
                         {"connect_seconds", seconds(r.connect_us)}});
}

}  // namespace cohort::discovery
