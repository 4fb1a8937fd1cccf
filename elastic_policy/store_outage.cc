#include "elastic_policy/store_outage.h"

namespace cohort::elastic_policy {

StoreOutage::Verdict StoreOutage::unreachable(TimePoint last_answer, bool workers_running,
                                              TimePoint now) {
  Verdict verdict;
  if (!since_) {
    verdict.began = true;
    since_ = last_answer;
    idle_since_ = last_answer;
  }
  if (workers_running) idle_since_ = now;
  verdict.stop = now - idle_since_ >= timeout_;
  return verdict;
}

bool StoreOutage::answered() {
  bool ended = since_.has_value();
  since_.reset();
  return ended;
}

}  // namespace cohort::elastic_policy
