// Rule 4 of the elastic policy (elastic_policy/elastic_policy.h), the part both elastic modes
// share: the members of a round keep each host's ranks consecutive. Host leaders
// (COHORT_CONTROL_LEADERS, core/leader.h) and the hierarchical collectives serve a host's ranks
// through one of them, and the local ranks a launcher hands out count a host's ranks in rank
// order, so a worker that joins a host with survivors takes its rank among them, not after the
// last host's.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace cohort::discovery {

// Reorders `members` (a round's, in the order the policy picked them: survivors in their old rank
// order, then new workers) host by host: hosts in the order of their first member, each host's
// members in their given order. `host_of(member)` names a member's host. So the lowest surviving
// rank stays rank 0, survivors of one host keep their order, and a host's new workers follow its
// survivors.
template <class Member, class HostOf>
void group_by_host(std::vector<Member>& members, HostOf host_of) {
  std::map<std::string, size_t> first;
  for (size_t i = 0; i < members.size(); ++i) first.try_emplace(host_of(members[i]), i);
  std::stable_sort(members.begin(), members.end(), [&](const Member& a, const Member& b) {
    return first.at(host_of(a)) < first.at(host_of(b));
  });
}

}  // namespace cohort::discovery
