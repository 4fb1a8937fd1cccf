// The negotiator's process-set bookkeeping: which sets exist, adding and removing them as their
// collectives become ready, and refusing submissions to sets that do not exist (any more).
#include <algorithm>
#include <utility>

#include "core/negotiator.h"

namespace cohort {

void Negotiator::add_process_set(int id, std::vector<int> members) {
  sets_[id] = std::move(members);
  next_set_id_ = std::max(next_set_id_, id + 1);
}

std::optional<std::string> Negotiator::cannot_remove(const Request& request) const {
  if (request.members.size() != 1) return "the request names no single process set";
  int id = static_cast<int>(request.members[0]);
  if (id == 0) return "the global process set (id 0) cannot be removed";
  if (removed_.contains(id)) return "process set " + std::to_string(id) + " was already removed";
  if (!sets_.contains(id)) return "process set " + std::to_string(id) + " does not exist";
  return std::nullopt;
}

void Negotiator::change_process_sets(const Entry& entry, Response& response) {
  if (response.kind != Response::Kind::kExecute) return;
  const Request& d = description(entry);
  if (response.type == OpType::kAddProcessSet) {
    response.process_set = next_set_id_;
    add_process_set(response.process_set, std::vector<int>(d.members.begin(), d.members.end()));
  } else if (response.type == OpType::kRemoveProcessSet) {
    int id = static_cast<int>(d.members.at(0));
    removed_.insert(id);
    just_removed_.push_back(id);
  }
}

void Negotiator::fail_removed_sets(std::vector<Response>& responses) {
  if (removed_.empty()) return;
  to_table_where([&](const Hits& h) { return removed_.contains(h.key.first); });
  for (auto it = table_.begin(); it != table_.end();) {
    if (!removed_.contains(it->first.first)) {
      ++it;
      continue;
    }
    Response error{.kind = Response::Kind::kError,
                   .type = description(it->second).type,
                   .names = {it->first.second},
                   .process_set = it->first.first};
    error.error = describe(it->first) + " cannot complete: process set " +
                  std::to_string(it->first.first) + " was removed (remove_process_set) while " +
                  missing_ranks(it->second);
    error.not_submitted = not_submitted(it->second);
    responses.push_back(std::move(error));
    std::erase_if(ready_order_, [&](const Ready& r) { return r.key == it->first; });
    it = table_.erase(it);
  }
  for (int id : std::exchange(just_removed_, {})) sets_.erase(id);
}

std::optional<Response> Negotiator::reject(int rank, const Request& request) const {
  std::string why;
  auto set = sets_.find(request.process_set);
  if (removed_.contains(request.process_set)) {
    why =
        "process set " + std::to_string(request.process_set) + " was removed (remove_process_set)";
  } else if (set == sets_.end()) {
    why = "process set " + std::to_string(request.process_set) + " does not exist";
  } else if (!std::binary_search(set->second.begin(), set->second.end(), rank)) {
    why = "rank " + std::to_string(rank) + " is not a member of process set " +
          std::to_string(request.process_set);
  } else if (joined_[rank] && request.type != OpType::kJoin) {
    why = "rank " + std::to_string(rank) + " submitted it after calling join()";
  } else {
    return std::nullopt;
  }
  Response error{.kind = Response::Kind::kError,
                 .type = request.type,
                 .names = {request.name},
                 .process_set = request.process_set};
  error.error = std::string(to_string(request.type)) + " '" + request.name + "': " + why;
  return error;
}

}  // namespace cohort
