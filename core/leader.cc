#include "core/leader.h"

#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "cohort/errors.h"
#include "core/backend_factory.h"
#include "core/coordinator.h"

namespace cohort {

std::vector<int> host_leaders(std::span<const std::string> hosts) {
  std::vector<int> leader_of(hosts.size());
  std::map<std::string_view, int> first_on;
  for (size_t r = 0; r < hosts.size(); ++r) {
    leader_of[r] = first_on.try_emplace(hosts[r], static_cast<int>(r)).first->second;
  }
  return leader_of;
}

bool leaders_wanted(Config::Hierarchy setting, const std::vector<std::string>& hosts) {
  if (setting == Config::Hierarchy::kOff || hosts.size() < 2) return false;
  return setting == Config::Hierarchy::kOn || some_host_shared(hosts);
}

std::vector<int> led_by(int leader, std::span<const int> leader_of) {
  std::vector<int> ranks;
  for (int r = 0; r < static_cast<int>(leader_of.size()); ++r) {
    if (leader_of[r] == leader) ranks.push_back(r);
  }
  return ranks;
}

std::string describe_ranks(std::span<const int> ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (i > 0) text += ", ";
    text += std::to_string(ranks[i]);
    if (j > i) text += " to " + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

std::vector<int> control_peers(int rank, std::span<const int> leader_of) {
  std::vector<int> peers;
  for (int r = 1; r < static_cast<int>(leader_of.size()); ++r) {
    bool member = r != rank && leader_of[r] == rank;
    bool other_leader = rank == 0 && leader_of[r] == r;
    if (member || other_leader) peers.push_back(r);
  }
  return peers;
}

Leader::Leader(const Config& config, int rank, std::vector<int> members, ControlChannel& control,
               Executor& executor)
    : config_(config),
      rank_(rank),
      members_(std::move(members)),
      control_(control),
      self_(control, executor, 0) {}

bool Leader::step(std::vector<ControlMessage> messages, std::vector<Request> fresh, bool shutdown) {
  auto own = self_.next_list(std::move(fresh), shutdown);
  if (!own.empty()) up_.add(rank_, own);
  for (const auto& message : messages) {
    if (message.peer != 0) up_.add(message.peer, message.payload);
  }
  if (!up_.empty()) control_.send(0, up_.take());
  for (const auto& message : messages) {
    if (message.peer == 0 && forward_and_run(message.payload)) return true;
  }
  return false;
}

bool Leader::forward_and_run(std::span<const std::byte> payload) {
  for (int member : members_) control_.send(member, payload);
  // Every member needs the whole list before it can join the collectives in it.
  if (!members_.empty()) control_.flush(config_.timeout);
  return self_.apply(payload);
}

void Leader::on_fail(const std::string& reason) {
  Coordinator::notify(control_, members_,
                      "rank " + std::to_string(rank_) + ", this host's leader, failed: " + reason);
}

}  // namespace cohort
