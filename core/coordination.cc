#include "core/coordination.h"

#include <string>
#include <utility>

#include "base/log.h"
#include "cohort/errors.h"

namespace cohort {

Coordination::Coordination(const Config& config, int size, Timeline& timeline)
    : config_(config),
      timeline_(timeline),
      cache_(config.cache_capacity, size),
      negotiator_(size, &cache_) {}

std::optional<ResponseList> Coordination::cycle(std::vector<ControlMessage> messages,
                                                std::vector<Request> fresh, bool shutdown) {
  for (auto& request : fresh) {
    // Rank 0's own submissions count as hits where its cache has them, as the others' do.
    if (auto hit = cache_.hit(request)) {
      count_hit(0, *hit);
    } else {
      negotiate(0, std::move(request));
    }
  }
  if (shutdown && !shutdown_announced_) {
    negotiator_.mark_shut_down(0);
    shutdown_announced_ = true;
  }
  for (const auto& message : messages) receive(message);
  ResponseList out = decide();
  if (out.responses.empty() && !out.shutdown) return std::nullopt;
  cache_.sending(out);
  return out;
}

void Coordination::receive(const ControlMessage& message) {
  RequestList list;
  try {
    list = decode_request_list(message.payload);
  } catch (const InternalError& e) {
    throw InternalError("rank " + std::to_string(message.peer) + " sent a " + e.what());
  }
  cache_.acknowledge(message.peer, list.applied);
  if (timeline_.enabled()) {
    for (uint32_t hit : list.hits) count_hit(message.peer, hit);
  } else {
    count_runs(message.peer, list.hits);
  }
  for (auto& request : list.requests) negotiate(message.peer, std::move(request));
  if (list.shutdown) negotiator_.mark_shut_down(message.peer);
}

void Coordination::negotiate(int rank, Request request) {
  std::string name = request.name;
  std::string_view op = to_string(request.type);
  int submitted = negotiator_.add(rank, std::move(request));
  if (submitted == 1) timeline_.negotiation_started(name, op);
  timeline_.rank_ready(name, rank);
}

void Coordination::count_hit(int rank, uint32_t hit) {
  int submitted = negotiator_.hit(rank, hit);
  if (!timeline_.enabled()) return;
  const Request& cached = *cache_.find(ResponseCache::hit_id(hit));
  if (submitted == 1) timeline_.negotiation_started(cached.name, to_string(cached.type));
  timeline_.rank_ready(cached.name, rank);
}

void Coordination::count_runs(int rank, const std::vector<uint32_t>& hits) {
  for (size_t i = 0; i < hits.size();) {
    size_t n = 1;  // hits on consecutive ids with the same buffer bit differ by 2
    while (i + n < hits.size() && hits[i + n] == hits[i] + 2 * n) ++n;
    negotiator_.hit_run(rank, hits[i], n);
    i += n;
  }
}

ResponseList Coordination::decide() {
  ResponseList out{negotiator_.take_ready(config_.fusion_threshold), negotiator_.all_shut_down()};
  inspect_stalls(out.responses);
  for (const auto& response : out.responses) {
    for (const auto& name : response.names) timeline_.negotiation_ended(name);
  }
  return out;
}

void Coordination::inspect_stalls(std::vector<Response>& responses) {
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

}  // namespace cohort
