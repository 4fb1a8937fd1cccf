// What rank 0 decides in one cycle, without the sockets or the execution: it takes every rank's
// RequestList, its own requests included, negotiates them (core/negotiator.h) with the response
// cache's ids (core/response_cache.h), inspects stalls, records the negotiation in the timeline,
// and hands back the next ResponseList, ready to encode. The Coordinator (core/coordinator.h)
// sends that list to every other rank and runs it; bench/scale/coordinator_bench drives this class
// alone with thousands of simulated ranks.
//
// With host leaders (COHORT_CONTROL_LEADERS, core/leader.h) a leader's message is an envelope
// (core/envelope.h) of its ranks' RequestLists: each list is decoded once and taken for every rank
// it names, exactly as if each of those ranks had sent it, so that ordering, mismatch errors and
// stall reports name the same ranks as with the star.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/control_channel.h"
#include "core/envelope.h"
#include "core/negotiator.h"
#include "core/request.h"
#include "core/response_cache.h"
#include "core/timeline.h"

namespace cohort {

class Coordination {
 public:
  // `config` and `timeline` outlive this object.
  // `leader_of[r]`: rank r's host leader, where there are leaders (empty: none, the star).
  Coordination(const Config& config, int size, Timeline& timeline, std::vector<int> leader_of = {});
  Coordination(const Coordination&) = delete;
  Coordination& operator=(const Coordination&) = delete;

  // One cycle (the arguments are Role::step's): the list to send every rank and run, its cache
  // ids announced (ResponseCache::sending), or nullopt when there is nothing to send.
  std::optional<ResponseList> cycle(std::vector<ControlMessage> messages,
                                    std::vector<Request> fresh, bool shutdown);

 private:
  using Clock = std::chrono::steady_clock;

  // Takes one worker's RequestList, or a leader's envelope of several.
  void receive(const ControlMessage& message);
  void receive_envelope(const ControlMessage& message);
  // Takes `list` (its bytes) as sent by each of `ranks`, through `leader` (or -1: directly).
  void receive_list(std::span<const std::byte> bytes, std::span<const int> ranks, int leader);
  // Decodes `bytes` into list_ and runs_, unless they are the last list's that held only hits.
  void decode(std::span<const std::byte> bytes, std::span<const int> ranks, int leader);
  void negotiate(int rank, Request request);
  // A cache hit (RequestList::hits), counted without a Request (Negotiator::hit).
  void count_hit(int rank, uint32_t hit);
  // The same for ranks' hits without the timeline, runs of consecutive ids at a time.
  void count_runs(std::span<const int> ranks);
  // The next ResponseList: what is ready, and what the stall inspector gave up on.
  ResponseList decide();
  void inspect_stalls(std::vector<Response>& responses);

  const Config& config_;
  int size_;
  Timeline& timeline_;
  std::vector<std::vector<int>> behind_;  // with leaders: each leader's ranks (itself first)
  EnvelopeView envelope_;                 // the one being taken, reused
  // The list being taken, and its hits as runs of consecutive ids (first hit, length). Where it
  // held only hits (a cached step: the same bytes from every rank), its bytes stay in
  // hits_only_, so that the next list with those bytes is neither decoded nor scanned again.
  RequestList list_;
  std::vector<std::pair<uint32_t, size_t>> runs_;
  std::vector<std::byte> hits_only_;
  uint32_t next_own_id_ = 0;  // the cache id rank 0's next own submission most likely has
  ResponseCache cache_;
  Negotiator negotiator_;  // refers to cache_
  bool shutdown_announced_ = false;
  Clock::time_point next_stall_check_;
};

}  // namespace cohort
