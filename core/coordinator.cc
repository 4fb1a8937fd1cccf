#include "core/coordinator.h"

#include <algorithm>
#include <utility>

#include "base/log.h"
#include "cohort/errors.h"

namespace cohort {

using std::chrono::microseconds;

Coordinator::Coordinator(const Config& config, int size, ControlChannel& control,
                         Executor& executor, Timeline& timeline, std::vector<int> downstream,
                         std::vector<int> leader_of)
    : config_(config),
      downstream_(std::move(downstream)),
      control_(control),
      executor_(executor),
      coordination_(config, size, timeline, std::move(leader_of)) {}

bool Coordinator::step(std::vector<ControlMessage> messages, std::vector<Request> fresh,
                       bool shutdown) {
  auto out = coordination_.cycle(std::move(messages), std::move(fresh), shutdown);
  if (!out) return false;
  send(*out);
  // Rank 0 is a rank like the others: it runs the list it has just sent.
  return executor_.execute(*out);
}

void Coordinator::send(const ResponseList& list) {
  auto bytes = encode(list);
  for (int peer : downstream_) control_.send(peer, bytes);
  // Every rank needs the whole list before it can join the collectives in it.
  control_.flush(config_.timeout);
}

microseconds Coordinator::wait_timeout(microseconds idle) const {
  microseconds timeout = idle;
  if (config_.stall_check) timeout = std::min<microseconds>(timeout, config_.stall_check_time / 2);
  if (config_.stall_shutdown_time.count() > 0) {
    timeout = std::min<microseconds>(timeout, config_.stall_shutdown_time / 4);
  }
  return std::max<microseconds>(timeout, std::chrono::milliseconds(1));
}

void Coordinator::on_fail(const std::string& reason) {
  notify(control_, downstream_, "rank 0 aborted the job: " + reason);
}

void Coordinator::notify(ControlChannel& control, const std::vector<int>& peers,
                         const std::string& reason) {
  auto bytes = encode(ResponseList{.abort_reason = reason});
  for (int peer : peers) {
    try {
      control.send(peer, bytes);
    } catch (const InternalError&) {
    }
  }
  try {
    control.flush(std::chrono::milliseconds(100));
  } catch (const InternalError&) {
  }
}

}  // namespace cohort
