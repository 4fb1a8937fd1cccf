#include "ops/hierarchical_backend.h"

#include <algorithm>
#include <vector>

#include "cohort/errors.h"
#include "ops/shm_collectives.h"

namespace cohort::ops {
namespace {

// Where this rank stands: its host's ranks (sorted world ranks) and every host's lowest rank.
struct Hosts {
  std::vector<int> mine;
  std::vector<int> leaders;
};

Hosts group_hosts(const std::vector<std::string>& hosts, int rank) {
  Hosts out;
  for (int r = 0; r < static_cast<int>(hosts.size()); ++r) {
    if (hosts[r] == hosts[rank]) out.mine.push_back(r);
    if (std::find(hosts.begin(), hosts.begin() + r, hosts[r]) == hosts.begin() + r) {
      out.leaders.push_back(r);
    }
  }
  return out;
}

class HierarchicalBackend final : public Backend {
 public:
  HierarchicalBackend(std::unique_ptr<Backend> world, std::unique_ptr<ShmGroup> host,
                      std::unique_ptr<Backend> cross)
      : world_(std::move(world)), host_(std::move(host)), cross_(std::move(cross)) {}

  std::string_view name() const override { return "hierarchical"; }
  int rank() const override { return world_->rank(); }
  int size() const override { return world_->size(); }

  void allreduce(void* buffer, size_t count, DataType dtype, ReduceOp op,
                 const BufferBinding& binding) override {
    if (op == ReduceOp::kAverage) {
      throw InvalidArgument("hierarchical allreduce: average is a sum followed by a scale");
    }
    if (count == 0) return;
    auto* data = static_cast<std::byte*>(buffer);
    size_t element = element_size(dtype);
    if (host_) {
      shm::reduce(*host_, "allreduce", buffer, count, dtype, op,
                  [&](size_t first, size_t n, const std::byte* values) {
                    shm::copy_bytes(data + first * element, values, n * element);
                  });
    }
    if (cross_)
      cross_->allreduce(buffer, count, dtype, op, {binding.key + "/cross", binding.rebind});
    if (host_) shm::broadcast(*host_, buffer, count * element, 0);
  }

  void broadcast(void* buffer, size_t bytes, int root) override {
    world_->broadcast(buffer, bytes, root);
  }
  void allgatherv(const void* input, void* output, std::span<const size_t> counts) override {
    world_->allgatherv(input, output, counts);
  }
  void barrier() override { world_->barrier(); }
  void alltoallv(const void* input, std::span<const size_t> send_counts, void* output,
                 std::span<const size_t> recv_counts) override {
    world_->alltoallv(input, send_counts, output, recv_counts);
  }
  void reduce_scatter(const void* input, void* output, std::span<const size_t> counts,
                      DataType dtype, ReduceOp op) override {
    world_->reduce_scatter(input, output, counts, dtype, op);
  }
  std::unique_ptr<Backend> split(std::span<const int> ranks, const std::string& key) override {
    return world_->split(ranks, key);
  }

  void abort(const std::string& reason) override {
    if (host_) host_->abort(reason);
    if (cross_) cross_->abort(reason);
    world_->abort(reason);
  }

 private:
  std::unique_ptr<Backend> world_;
  std::unique_ptr<ShmGroup> host_;  // null on a host with one rank
  std::unique_ptr<Backend> cross_;  // the hosts' lowest ranks; null elsewhere
};

// Every rank's meeting point, through the world: each host meets at its lowest rank's.
ShmRendezvous host_meeting(Backend& world, int leader) {
  std::vector<ShmRendezvous> all(world.size());
  ShmRendezvous mine = ShmRendezvous::random();
  std::vector<size_t> counts(world.size(), sizeof(ShmRendezvous));
  world.allgatherv(&mine, all.data(), counts);
  return all[leader];
}

}  // namespace

std::unique_ptr<Backend> make_hierarchical_backend(std::unique_ptr<Backend>& world,
                                                   const HierarchicalOptions& options) {
  int rank = world->rank();
  if (static_cast<int>(options.hosts.size()) != world->size()) {
    throw InvalidArgument("hierarchical backend: one host name per rank is needed");
  }
  Hosts hosts = group_hosts(options.hosts, rank);
  ShmRendezvous meet = host_meeting(*world, hosts.mine.front());
  std::unique_ptr<Backend> cross;
  bool leader = hosts.mine.front() == rank;
  if (leader && hosts.leaders.size() > 1) cross = world->split(hosts.leaders, "hierarchical-cross");
  std::unique_ptr<ShmGroup> host;
  if (hosts.mine.size() > 1) {
    int local = static_cast<int>(std::find(hosts.mine.begin(), hosts.mine.end(), rank) -
                                 hosts.mine.begin());
    host = join_shm_group(meet, hosts.mine, local, options.shm);
  }
  return std::make_unique<HierarchicalBackend>(std::move(world), std::move(host), std::move(cross));
}

}  // namespace cohort::ops
