#include "core/negotiator.h"

#include <algorithm>
#include <functional>
#include <sstream>

#include "cohort/errors.h"
#include "core/fusion.h"

namespace cohort {
namespace {

// Builds "rank 0 [2, 3], rank 1 [2, 4]" for the field that differs.
template <typename Field>
std::optional<std::string> differing(const std::vector<std::optional<Request>>& by_rank,
                                     const char* what, Field field) {
  const Request& first = *by_rank[0];
  bool same = std::all_of(by_rank.begin(), by_rank.end(),
                          [&](const auto& r) { return field(*r) == field(first); });
  if (same) return std::nullopt;
  std::ostringstream out;
  out << "mismatched " << what << ": ";
  for (size_t rank = 0; rank < by_rank.size(); ++rank) {
    out << (rank ? ", " : "") << "rank " << rank << " " << field(*by_rank[rank]);
  }
  return out.str();
}

Shape trailing_dims(const Request& r) {
  return r.shape.empty() ? Shape{} : Shape(r.shape.begin() + 1, r.shape.end());
}

}  // namespace

std::optional<std::string> find_mismatch(const std::string& name,
                                         const std::vector<std::optional<Request>>& by_rank) {
  using R = const Request&;
  std::vector<std::function<std::optional<std::string>()>> checks = {
      [&] { return differing(by_rank, "operations", [](R r) { return to_string(r.type); }); },
      [&] { return differing(by_rank, "data types", [](R r) { return to_string(r.dtype); }); },
  };
  OpType type = by_rank[0]->type;
  if (type == OpType::kAllreduce || type == OpType::kBroadcast) {
    checks.push_back(
        [&] { return differing(by_rank, "shapes", [](R r) { return to_string(r.shape); }); });
  }
  if (type == OpType::kAllreduce) {
    checks.push_back([&] {
      return differing(by_rank, "reduce ops", [](R r) { return to_string(r.reduce_op); });
    });
    checks.push_back(
        [&] { return differing(by_rank, "prescale factors", [](R r) { return r.prescale; }); });
    checks.push_back(
        [&] { return differing(by_rank, "postscale factors", [](R r) { return r.postscale; }); });
  }
  if (type == OpType::kBroadcast) {
    checks.push_back([&] { return differing(by_rank, "root ranks", [](R r) { return r.root; }); });
  }
  if (type == OpType::kAllgather) {
    checks.push_back([&] {
      return differing(by_rank, "ranks (number of dimensions)", [](R r) { return r.shape.size(); });
    });
    checks.push_back([&] {
      return differing(by_rank, "shapes after the first dimension",
                       [](R r) { return to_string(trailing_dims(r)); });
    });
  }
  for (const auto& check : checks) {
    if (auto message = check()) {
      return std::string(to_string(type)) + " '" + name + "': " + *message;
    }
  }
  return std::nullopt;
}

Negotiator::Negotiator(int size) : size_(size), shut_down_(size, false) {}

int Negotiator::add(int rank, Request request) {
  auto& entry = table_[request.name];
  if (entry.by_rank.empty()) {
    entry.by_rank.resize(size_);
    entry.first_seen = Clock::now();
  }
  if (entry.by_rank[rank]) {
    // The submitting rank's queue forbids this; a second copy means a broken peer.
    throw InternalError("rank " + std::to_string(rank) + " submitted '" + request.name +
                        "' twice while it was in flight");
  }
  std::string name = request.name;
  entry.by_rank[rank] = std::move(request);
  if (++entry.count == size_) ready_order_.push_back(std::move(name));
  return entry.count;
}

void Negotiator::mark_shut_down(int rank) {
  shut_down_[rank] = true;
}

bool Negotiator::all_shut_down() const {
  return std::all_of(shut_down_.begin(), shut_down_.end(), [](bool b) { return b; });
}

std::optional<std::string> Negotiator::orphaned_by_shutdown(const Entry& entry) const {
  for (int rank = 0; rank < size_; ++rank) {
    if (!entry.by_rank[rank] && shut_down_[rank]) {
      return "rank " + std::to_string(rank) + " has shut down and will never submit it";
    }
  }
  return std::nullopt;
}

std::vector<Response> Negotiator::take_ready(size_t fusion_threshold) {
  std::vector<ReadyResponse> ready;
  for (const auto& name : ready_order_) {
    const Entry& entry = table_.at(name);
    ready.push_back({construct(name, entry), *entry.by_rank[0]});
    table_.erase(name);
  }
  ready_order_.clear();
  std::vector<Response> responses = fuse_responses(std::move(ready), fusion_threshold);
  // Names that some rank can no longer submit would wait forever: fail them now.
  for (auto it = table_.begin(); it != table_.end();) {
    if (auto reason = orphaned_by_shutdown(it->second)) {
      Response error{.kind = Response::Kind::kError, .names = {it->first}};
      error.error = "'" + it->first + "' cannot complete: " + *reason;
      responses.push_back(std::move(error));
      it = table_.erase(it);
    } else {
      ++it;
    }
  }
  return responses;
}

std::string Negotiator::stall_report(Clock::time_point now, Clock::duration after) const {
  std::map<int, std::vector<std::string>> missing;
  size_t stalled = 0;
  for (const auto& [name, entry] : table_) {
    if (now - entry.first_seen < after) continue;
    ++stalled;
    for (int rank = 0; rank < size_; ++rank) {
      if (!entry.by_rank[rank]) missing[rank].push_back(name);
    }
  }
  if (stalled == 0) return "";
  std::ostringstream out;
  auto seconds = std::chrono::duration<double>(after).count();
  out << stalled << " collective(s) submitted by some ranks have waited more than " << seconds
      << " s for the others. Missing:";
  const char* separator = " ";
  for (const auto& [rank, names] : missing) {
    out << separator << "rank " << rank << " has not submitted [";
    for (size_t i = 0; i < std::min(names.size(), kNamesPerRank); ++i) {
      out << (i ? ", " : "") << "'" << names[i] << "'";
    }
    if (names.size() > kNamesPerRank) out << ", and " << names.size() - kNamesPerRank << " more";
    out << "]";
    separator = "; ";
  }
  return out.str() + ".";
}

std::string Negotiator::missing_ranks(const Entry& entry) const {
  std::string submitted, missing;
  for (int rank = 0; rank < size_; ++rank) {
    std::string& list = entry.by_rank[rank] ? submitted : missing;
    list += (list.empty() ? "" : ", ") + std::to_string(rank);
  }
  return "submitted by ranks [" + submitted + "] but not by ranks [" + missing + "]";
}

std::vector<Response> Negotiator::expire_stalled(Clock::time_point now, Clock::duration after) {
  std::vector<Response> responses;
  auto seconds = std::chrono::duration<double>(after).count();
  for (auto it = table_.begin(); it != table_.end();) {
    if (now - it->second.first_seen < after) {
      ++it;
      continue;
    }
    Response stalled{.kind = Response::Kind::kStalled, .names = {it->first}};
    std::ostringstream why;
    why << "'" << it->first << "' stalled: " << missing_ranks(it->second) << " for more than "
        << seconds << " s (COHORT_STALL_SHUTDOWN_TIME_SECONDS)";
    stalled.error = why.str();
    responses.push_back(std::move(stalled));
    it = table_.erase(it);
  }
  return responses;
}

Response Negotiator::construct(const std::string& name, const Entry& entry) const {
  Response response{.type = entry.by_rank[0]->type, .names = {name}};
  if (auto mismatch = find_mismatch(name, entry.by_rank)) {
    response.kind = Response::Kind::kError;
    response.error = *mismatch;
    return response;
  }
  if (response.type == OpType::kAllgather) {
    for (const auto& r : entry.by_rank) response.first_dims.push_back(r->shape.at(0));
  }
  response.rebind = std::any_of(entry.by_rank.begin(), entry.by_rank.end(),
                                [](const auto& r) { return r->buffer_changed; });
  return response;
}

}  // namespace cohort
