#include "launcher/round_cause.h"

namespace cohort::discovery {

void RoundCause::note(const char* cause, const std::string& why, TimePoint now) {
  // A member that left its round usually left because of something the launcher learns of a
  // moment later (a failure, a drain): that names the round better.
  if (!cause_.empty() && cause_ != "worker_left") return;
  if (cause_.empty()) cause_at_ = now;
  cause_ = cause;
  reason_ = why;
}

void RoundCause::adopt(const std::string& noted, TimePoint now) {
  auto space = noted.find(' ');
  if (space == std::string::npos || space == 0) return;
  if (cause_.empty()) cause_at_ = now;  // as note(): none noted since the last round
  cause_ = noted.substr(0, space);
  reason_ = noted.substr(space + 1);
}

nlohmann::json RoundCause::take(TimePoint now) {
  nlohmann::json fields = {{"cause", cause_}, {"reason", reason_}};
  if (cause_at_) {
    fields["recovery_seconds"] = std::chrono::duration<double>(now - *cause_at_).count();
  }
  cause_at_.reset();
  cause_.clear();
  reason_.clear();
  return fields;
}

}  // namespace cohort::discovery
