#include "state/shard_world.h"

#include "base/net.h"
#include "core/runtime_slot.h"
#include "state/agreement.h"

namespace cohort::elastic::detail {
namespace {

// What names this rank's host: cohortrun's address for it (127.0.0.1 and 127.0.0.2 are two hosts
// in tests), else the machine's name.
std::string host_key(const cohort::Runtime& rt) {
  if (rt.config().launcher == Config::Launcher::kCohortrun) return rt.config().hostname;
  return net::local_host_name();
}

}  // namespace

const ShardWorld& ShardWorldCache::current(const std::string& collective) {
  std::shared_ptr<cohort::Runtime> rt = cohort::detail::current_runtime();
  if (runtime_.lock() == rt) return world_;
  std::string mine = host_key(*rt);
  Gathered all = allgather_bytes(collective, std::as_bytes(std::span(mine.data(), mine.size())));
  ShardWorld world;
  world.rank = rt->topology().rank;
  world.size = rt->topology().size;
  for (auto bytes : all.ranks) {
    world.hosts.emplace_back(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  world.replicas = static_cast<int>(rt->config().state_replicas);
  world_ = std::move(world);
  runtime_ = rt;
  return world_;
}

}  // namespace cohort::elastic::detail
