#include "core/negotiator.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <sstream>
#include <utility>

#include "cohort/errors.h"
#include "core/fusion.h"

namespace cohort {
namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return "[" + out + "]";
}

}  // namespace

Negotiator::Negotiator(int size, ResponseCache* cache)
    : size_(size), cache_(cache), bits_(size), shut_down_(size, false), joined_(size, false) {
  std::vector<int> everyone(size);
  std::iota(everyone.begin(), everyone.end(), 0);
  sets_[0] = std::move(everyone);
}

int Negotiator::add(int rank, Request request) {
  // Its name was counted by id so far: from now on it is compared request by request.
  if (pending_slots_ != 0) key_to_table(Key{request.process_set, request.name});
  if (auto error = reject(rank, request)) {
    // Every rank that submitted the name gets the error, so nothing of it may stay behind.
    Key key{request.process_set, request.name};
    table_.erase(key);
    std::erase_if(ready_order_, [&](const Ready& r) { return r.key == key; });
    rejected_.push_back(std::move(*error));
    return 0;
  }
  Key key{request.process_set, request.name};
  auto& entry = table_[key];
  if (entry.by_rank.empty()) {
    entry.by_rank.resize(size_);
    entry.first_seen = Clock::now();
  }
  if (entry.by_rank[rank]) {
    // The submitting rank's queue forbids this; a second copy means a broken peer.
    throw InternalError("rank " + std::to_string(rank) + " submitted '" + request.name +
                        "' twice while it was in flight");
  }
  bool join = request.type == OpType::kJoin;
  entry.by_rank[rank] = std::move(request);
  int count = ++entry.count;
  mark_if_ready(key, entry);
  if (sets_.size() > 1 && fail_if_deadlocked_across_sets(key)) return 0;
  if (join) record_join(rank);
  return count;
}

void Negotiator::record_join(int rank) {
  if (!joined_[rank]) joined_ranks_.push_back(rank);
  joined_[rank] = true;
  last_joined_ = rank;
  // Allreduces that waited only for this rank can now run with its identity contribution.
  for (auto& [key, entry] : table_) mark_if_ready(key, entry);
  for (size_t slot : pending_by_key()) mark_if_ready(hits_[slot]);
}

const std::vector<int>& Negotiator::members(const Entry& entry) const {
  return sets_.at(description(entry).process_set);
}

const Request& Negotiator::description(const Entry& entry) const {
  return **std::find_if(entry.by_rank.begin(), entry.by_rank.end(),
                        [](const auto& r) { return r.has_value(); });
}

std::vector<int> Negotiator::members_where(const Entry& entry,
                                           const std::function<bool(int)>& keep) const {
  std::vector<int> out;
  for (int rank : members(entry)) {
    if (keep(rank)) out.push_back(rank);
  }
  return out;
}

std::vector<int64_t> Negotiator::not_submitted(const Entry& entry) const {
  auto ranks = members_where(entry, [&](int rank) { return !entry.by_rank[rank]; });
  return {ranks.begin(), ranks.end()};
}

std::vector<int> Negotiator::missing(const Entry& entry) const {
  const Request& d = description(entry);
  return missing_from(d.process_set, d.type,
                      [&](int rank) { return entry.by_rank[rank].has_value(); });
}

std::vector<int> Negotiator::missing_from(int32_t set, OpType type,
                                          const std::function<bool(int)>& submitted) const {
  // Joined ranks stand in for every collective of the whole world except join itself, which
  // they do submit; collectives other than allreduce then fail (cannot_run).
  bool joined_count = set == 0 && type != OpType::kJoin;
  std::vector<int> out;
  for (int rank : sets_.at(set)) {
    if (!submitted(rank) && !(joined_count && joined_[rank])) out.push_back(rank);
  }
  return out;
}

void Negotiator::mark_if_ready(const Key& key, Entry& entry) {
  if (entry.ready) return;
  // Nothing is missing only once every member has submitted or joined: until the counts can add
  // up to the set's size, skip missing()'s scan of the members, which on every add would make a
  // cycle quadratic in the number of ranks (bench/scale/coordinator_bench).
  if (static_cast<size_t>(entry.count + joined()) < sets_.at(key.first).size()) return;
  if (!missing(entry).empty()) return;
  entry.ready = true;
  ready_order_.push_back({key});
}

std::string Negotiator::describe(const Key& key) {
  std::string name = "'" + key.second + "'";
  if (key.first != 0) name += " (process set " + std::to_string(key.first) + ")";
  return name;
}

void Negotiator::mark_shut_down(int rank) {
  shut_down_[rank] = true;
}

bool Negotiator::all_shut_down() const {
  return std::all_of(shut_down_.begin(), shut_down_.end(), [](bool b) { return b; });
}

std::optional<std::string> Negotiator::orphaned_by_shutdown(const Entry& entry) const {
  for (int rank : missing(entry)) {
    if (shut_down_[rank]) {
      return "rank " + std::to_string(rank) + " has shut down and will never submit it";
    }
  }
  return std::nullopt;
}

std::vector<Response> Negotiator::take_ready(size_t fusion_threshold) {
  mark_ready_hits();
  std::vector<ReadyResponse> ready;
  ready.reserve(ready_order_.size());
  std::vector<size_t> closed;
  for (const auto& item : ready_order_) {
    if (item.slot != kNoSlot) {
      Hits& hits = hits_[static_cast<size_t>(item.slot)];
      if (!needs_table(hits)) {
        // The slot's request stays where it is (nothing below frees slots) and is not copied.
        ready.push_back({.response = construct_cached(hits), .described = &hits.request});
        closed.push_back(hits.slot);
        continue;
      }
      to_table(hits);
    }
    const Key& key = item.key;
    Entry& entry = table_.at(key);
    Response response = construct(key.second, entry);
    if (response.kind == Response::Kind::kExecute && response.type == OpType::kJoin) {
      std::fill(joined_.begin(), joined_.end(), false);
      joined_ranks_.clear();
      last_joined_ = -1;
    }
    change_process_sets(entry, response);
    if (cache_ && response.kind == Response::Kind::kExecute) {
      response.cache_ids = {cache_->put(description(entry))};
    }
    // The entry goes next: its description moves rather than copies (a group's can be large).
    auto first = std::find_if(entry.by_rank.begin(), entry.by_rank.end(),
                              [](const auto& r) { return r.has_value(); });
    ready.push_back({std::move(response), std::move(**first)});
    table_.erase(key);
  }
  ready_order_.clear();
  close(closed);
  std::vector<Response> responses = std::exchange(rejected_, {});
  for (auto& r : fuse_responses(std::move(ready), fusion_threshold)) {
    responses.push_back(std::move(r));
  }
  fail_removed_sets(responses);
  prune_hits();
  // Names that some rank can no longer submit would wait forever: fail them now.
  if (std::none_of(shut_down_.begin(), shut_down_.end(), [](bool b) { return b; })) {
    return responses;
  }
  to_table_where([](const Hits&) { return true; });
  for (auto it = table_.begin(); it != table_.end();) {
    if (auto reason = orphaned_by_shutdown(it->second)) {
      Response error{.kind = Response::Kind::kPeerLeft,
                     .names = {it->first.second},
                     .process_set = it->first.first};
      error.error = describe(it->first) + " cannot complete: " + *reason;
      error.not_submitted = not_submitted(it->second);
      responses.push_back(std::move(error));
      it = table_.erase(it);
    } else {
      ++it;
    }
  }
  return responses;
}

std::string Negotiator::stall_report(Clock::time_point now, Clock::duration after) const {
  std::map<int, std::vector<Key>> missing_names;
  size_t stalled = 0;
  for (const auto& [key, entry] : table_) {
    if (now - entry.first_seen < after) continue;
    ++stalled;
    for (int rank : missing(entry)) missing_names[rank].push_back(key);
  }
  for (size_t slot : pending_by_key()) {
    const Hits& hits = hits_[slot];
    const Key& key = hits.key;
    if (hits.ready || now - hits.first_seen < after) continue;
    ++stalled;
    auto submitted = [&](int rank) { return has(hits, rank); };
    for (int rank : missing_from(key.first, hits.request.type, submitted)) {
      missing_names[rank].push_back(key);
    }
  }
  if (stalled == 0) return "";
  std::ostringstream out;
  auto seconds = std::chrono::duration<double>(after).count();
  out << stalled << " collective(s) submitted by some ranks have waited more than " << seconds
      << " s for the others. Missing:";
  const char* separator = " ";
  for (const auto& [rank, names] : missing_names) {
    out << separator << "rank " << rank << " has not submitted [";
    for (size_t i = 0; i < std::min(names.size(), kNamesPerRank); ++i) {
      out << (i ? ", " : "") << describe(names[i]);
    }
    if (names.size() > kNamesPerRank) out << ", and " << names.size() - kNamesPerRank << " more";
    out << "]";
    separator = "; ";
  }
  return out.str() + ".";
}

std::string Negotiator::missing_ranks(const Entry& entry) const {
  auto submitted = members_where(entry, [&](int rank) { return entry.by_rank[rank].has_value(); });
  return "submitted by ranks " + rank_list(submitted) + " but not by ranks " +
         rank_list(missing(entry));
}

std::vector<Response> Negotiator::expire_stalled(Clock::time_point now, Clock::duration after) {
  std::vector<Response> responses;
  auto seconds = std::chrono::duration<double>(after).count();
  to_table_where([&](const Hits& h) { return !h.ready && now - h.first_seen >= after; });
  for (auto it = table_.begin(); it != table_.end();) {
    if (it->second.ready || now - it->second.first_seen < after) {
      ++it;
      continue;
    }
    Response stalled{.kind = Response::Kind::kStalled,
                     .names = {it->first.second},
                     .process_set = it->first.first};
    std::ostringstream why;
    why << describe(it->first) << " stalled: " << missing_ranks(it->second) << " for more than "
        << seconds << " s (COHORT_STALL_SHUTDOWN_TIME_SECONDS)";
    stalled.error = why.str();
    stalled.not_submitted = not_submitted(it->second);
    responses.push_back(std::move(stalled));
    it = table_.erase(it);
  }
  return responses;
}

std::optional<std::string> Negotiator::cannot_run(const Entry& entry) const {
  const Request& d = description(entry);
  bool host_allreduce = d.type == OpType::kAllreduce && d.device == kCpuDevice;
  if (host_allreduce || d.type == OpType::kJoin) return std::nullopt;
  std::vector<int> absent;
  for (int rank : members(entry)) {
    if (!entry.by_rank[rank]) absent.push_back(rank);
  }
  if (absent.empty()) return std::nullopt;
  return std::string(to_string(d.type)) + " cannot run while ranks " + rank_list(absent) +
         " have joined: only allreduce of host tensors continues without them";
}

Response Negotiator::construct(const std::string& name, const Entry& entry) const {
  const Request& d = description(entry);
  Response response{
      .type = d.type, .names = {name}, .process_set = d.process_set, .device = d.device};
  auto problem = find_mismatch(name, entry.by_rank);
  if (!problem) {
    auto why = cannot_run(entry);
    if (!why && d.type == OpType::kRemoveProcessSet) why = cannot_remove(d);
    if (!why && removed_.contains(d.process_set)) {
      why = "process set " + std::to_string(d.process_set) + " was removed (remove_process_set)";
    }
    if (why) problem = std::string(to_string(d.type)) + " '" + name + "': " + *why;
  }
  if (problem) {
    response.kind = Response::Kind::kError;
    response.error = *problem;
    return response;
  }
  const auto& ranks = members(entry);
  switch (d.type) {
    case OpType::kAllreduce:
      // fuse_responses() adds the element counts and how to batch them.
      response.dtype = d.dtype;
      response.reduce_op = d.reduce_op;
      break;
    case OpType::kAllgather:
      for (int r : ranks) response.first_dims.push_back(entry.by_rank[r]->shape.at(0));
      break;
    case OpType::kAlltoall:
      for (int r : ranks) {
        const auto& splits = entry.by_rank[r]->splits;
        response.first_dims.insert(response.first_dims.end(), splits.begin(), splits.end());
      }
      break;
    case OpType::kJoin:
      response.last_joined = last_joined_;
      break;
    default:
      break;
  }
  response.rebind = std::any_of(entry.by_rank.begin(), entry.by_rank.end(),
                                [](const auto& r) { return r && r->buffer_changed; });
  // A joined rank reduces a scratch buffer of its own: everyone rebinds with it.
  response.rebind = response.rebind || std::any_of(ranks.begin(), ranks.end(),
                                                   [&](int r) { return !entry.by_rank[r]; });
  return response;
}

}  // namespace cohort
