#include "core/coordination.h"

#include <algorithm>
#include <string>
#include <utility>

#include "base/log.h"
#include "cohort/errors.h"

namespace cohort {

Coordination::Coordination(const Config& config, int size, Timeline& timeline,
                           std::vector<int> leader_of)
    : config_(config),
      size_(size),
      timeline_(timeline),
      cache_(config.cache_capacity, size),
      negotiator_(size, &cache_) {
  if (leader_of.empty()) return;
  behind_.resize(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) behind_[static_cast<size_t>(leader_of[r])].push_back(r);
}

std::optional<ResponseList> Coordination::cycle(std::vector<ControlMessage> messages,
                                                std::vector<Request> fresh, bool shutdown) {
  for (auto& request : fresh) {
    // Rank 0's own submissions count as hits where its cache has them, as the others' do. They
    // come in the order of their ids (given in the order of the first step's): the id after the
    // last one's is the one to try first.
    if (auto hit = cache_.hit(request, next_own_id_)) {
      next_own_id_ = ResponseCache::hit_id(*hit) + 1;
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
  if (is_envelope(message.payload)) return receive_envelope(message);
  receive_list(message.payload, std::span(&message.peer, 1), -1);
}

void Coordination::receive_envelope(const ControlMessage& message) {
  int leader = message.peer;
  std::span<const int> behind;
  if (static_cast<size_t>(leader) < behind_.size()) behind = behind_[leader];
  decode_envelope(message.payload, leader, size_, behind, envelope_);
  for (const auto& entry : envelope_.entries) {
    receive_list(entry.list, envelope_.ranks_of(entry), leader);
  }
}

namespace {

// How errors name the ranks that sent a list: "rank 3", or "ranks 8, 9 (through their leader,
// rank 8)".
std::string senders(std::span<const int> ranks, int leader) {
  std::string who = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) who += (i ? ", " : "") + std::to_string(ranks[i]);
  if (leader < 0) return who;
  return who + " (through their leader, rank " + std::to_string(leader) + ")";
}

}  // namespace

void Coordination::decode(std::span<const std::byte> bytes, std::span<const int> ranks,
                          int leader) {
  if (!hits_only_.empty() && std::ranges::equal(bytes, hits_only_)) return;
  hits_only_.clear();
  try {
    list_ = decode_request_list(bytes);
  } catch (const InternalError& e) {
    throw InternalError(senders(ranks, leader) + " sent a " + e.what());
  }
  runs_.clear();
  const auto& hits = list_.hits;
  for (size_t i = 0; i < hits.size();) {
    size_t n = 1;  // hits on consecutive ids with the same buffer bit differ by 2
    while (i + n < hits.size() && hits[i + n] == hits[i] + 2 * n) ++n;
    runs_.emplace_back(hits[i], n);
    i += n;
  }
  if (list_.requests.empty()) hits_only_.assign(bytes.begin(), bytes.end());
}

void Coordination::receive_list(std::span<const std::byte> bytes, std::span<const int> ranks,
                                int leader) {
  decode(bytes, ranks, leader);
  for (int rank : ranks) cache_.acknowledge(rank, list_.applied);
  if (timeline_.enabled()) {
    for (int rank : ranks) {
      for (uint32_t hit : list_.hits) count_hit(rank, hit);
    }
  } else {
    count_runs(ranks);
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    bool last = i + 1 == ranks.size();  // takes the list's own requests; the others, copies
    for (auto& request : list_.requests) {
      negotiate(ranks[i], last ? std::move(request) : Request(request));
    }
  }
  if (list_.shutdown) {
    for (int rank : ranks) negotiator_.mark_shut_down(rank);
  }
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

void Coordination::count_runs(std::span<const int> ranks) {
  for (const auto& [first, n] : runs_) negotiator_.hit_run(ranks, first, n);
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
