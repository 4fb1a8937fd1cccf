#include "core/coordinator.h"

#include <algorithm>
#include <utility>

#include "base/log.h"
#include "cohort/errors.h"

namespace cohort {

using std::chrono::microseconds;

Coordinator::Coordinator(const Config& config, int size, ControlChannel& control,
                         Executor& executor, Timeline& timeline)
    : config_(config),
      size_(size),
      control_(control),
      executor_(executor),
      timeline_(timeline),
      cache_(config.cache_capacity, size),
      negotiator_(size, &cache_) {}

bool Coordinator::step(std::vector<ControlMessage> messages, std::vector<Request> fresh,
                       bool shutdown) {
  for (auto& request : fresh) negotiate(0, std::move(request));
  if (shutdown && !shutdown_announced_) {
    negotiator_.mark_shut_down(0);
    shutdown_announced_ = true;
  }
  for (const auto& message : messages) receive(message);
  ResponseList out = decide();
  if (out.responses.empty() && !out.shutdown) return false;
  send(out);
  // Rank 0 is a rank like the others: it runs the list it has just sent.
  return executor_.execute(out);
}

void Coordinator::receive(const ControlMessage& message) {
  RequestList list = decode_request_list(message.payload);
  cache_.acknowledge(message.peer, list.applied);
  for (uint32_t hit : list.hits) negotiate(message.peer, cache_.request_for(hit));
  for (auto& request : list.requests) negotiate(message.peer, std::move(request));
  if (list.shutdown) negotiator_.mark_shut_down(message.peer);
}

void Coordinator::negotiate(int rank, Request request) {
  std::string name = request.name;
  std::string_view op = to_string(request.type);
  int submitted = negotiator_.add(rank, std::move(request));
  if (submitted == 1) timeline_.negotiation_started(name, op);
  timeline_.rank_ready(name, rank);
}

ResponseList Coordinator::decide() {
  ResponseList out{negotiator_.take_ready(config_.fusion_threshold), negotiator_.all_shut_down()};
  inspect_stalls(out.responses);
  for (const auto& response : out.responses) {
    for (const auto& name : response.names) timeline_.negotiation_ended(name);
  }
  return out;
}

void Coordinator::inspect_stalls(std::vector<Response>& responses) {
  auto now = Clock::now();
  if (config_.stall_shutdown_time.count() > 0) {
    for (auto& r : negotiator_.expire_stalled(now, config_.stall_shutdown_time)) {
      log::error(r.error);
      responses.push_back(std::move(r));
    }
  }
  if (!config_.stall_check) return;
  if (next_stall_check_ == Clock::time_point{}) next_stall_check_ = now + config_.stall_check_time;
  if (now < next_stall_check_) return;
  next_stall_check_ = now + config_.stall_check_time;
  std::string report = negotiator_.stall_report(now, config_.stall_check_time);
  if (!report.empty()) log::warning("stall inspector: ", report);
}

void Coordinator::send(ResponseList& list) {
  cache_.sending(list);
  auto bytes = encode(list);
  for (int peer = 1; peer < size_; ++peer) control_.send(peer, bytes);
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
  // Best effort: a peer that is gone or slow learns from the closed connection instead.
  ResponseList notice{.abort_reason = "rank 0 aborted the job: " + reason};
  auto bytes = encode(notice);
  for (int peer = 1; peer < size_; ++peer) {
    try {
      control_.send(peer, bytes);
    } catch (const InternalError&) {
    }
  }
  try {
    control_.flush(std::chrono::milliseconds(100));
  } catch (const InternalError&) {
  }
}

}  // namespace cohort
