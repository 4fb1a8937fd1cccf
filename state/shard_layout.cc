#include "state/shard_layout.h"

#include <algorithm>
#include <map>

#include "cohort/errors.h"

namespace cohort::elastic {

ShardRange shard_range(uint64_t length, int rank, int size) {
  if (size <= 0 || rank < 0 || rank >= size) {
    throw InvalidArgument("shard_range: rank " + std::to_string(rank) + " is not in a world of " +
                          std::to_string(size));
  }
  auto n = static_cast<uint64_t>(size), r = static_cast<uint64_t>(rank);
  uint64_t base = length / n, extra = length % n;
  uint64_t begin = r * base + std::min(r, extra);
  return {begin, begin + base + (r < extra ? 1 : 0)};
}

namespace detail {

std::vector<int> replica_holders(int rank, const std::vector<std::string>& hosts, int replicas) {
  int size = static_cast<int>(hosts.size());
  if (replicas < 0 || replicas >= size) {
    throw InvalidArgument("COHORT_STATE_REPLICAS=" + std::to_string(replicas) +
                          " needs 0 <= replicas < the world size (" + std::to_string(size) + ")");
  }
  // Each host's ranks in rank order, hosts in the order they first appear.
  std::vector<std::vector<int>> by_host;
  std::map<std::string, size_t> index;
  for (int r = 0; r < size; ++r) {
    auto [it, fresh] = index.try_emplace(hosts[r], by_host.size());
    if (fresh) by_host.emplace_back();
    by_host[it->second].push_back(r);
  }
  size_t home = index.at(hosts[rank]);
  const std::vector<int>& mine = by_host[home];
  size_t local = static_cast<size_t>(std::find(mine.begin(), mine.end(), rank) - mine.begin());
  std::vector<int> out;
  auto add = [&](int r) {
    if (r != rank && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  };
  // The same local index on each next host, as in a ring of hosts.
  for (size_t step = 1; step < by_host.size(); ++step) {
    const std::vector<int>& there = by_host[(home + step) % by_host.size()];
    add(there[local % there.size()]);
  }
  // More replicas than other hosts: the other hosts' other ranks, then this host's next ranks.
  for (int step = 1; step < size; ++step) {
    if (int r = (rank + step) % size; hosts[r] != hosts[rank]) add(r);
  }
  for (size_t step = 1; step < mine.size(); ++step) add(mine[(local + step) % mine.size()]);
  out.resize(static_cast<size_t>(replicas));
  return out;
}

std::vector<int> replicas_kept_by(int rank, const std::vector<std::string>& hosts, int replicas) {
  std::vector<int> kept;
  for (int owner = 0; owner < static_cast<int>(hosts.size()); ++owner) {
    std::vector<int> holders = replica_holders(owner, hosts, replicas);
    if (std::find(holders.begin(), holders.end(), rank) != holders.end()) kept.push_back(owner);
  }
  return kept;
}

}  // namespace detail
}  // namespace cohort::elastic
