#include "ops/hierarchical_backend.h"

#include <algorithm>
#include <vector>

#include "cohort/errors.h"
#include "ops/backend_args.h"
#include "ops/shm_collectives.h"

namespace cohort::ops {
namespace {

// Up to this many bytes of result, allgather is hierarchical. Measured on 2 loopback "hosts" of 2
// ranks (docs/benchmarks.md): 2.1 times as fast at 128 KiB, 1.3 times slower at 512 KiB.
constexpr size_t kHierarchicalAllgatherMaxBytes = size_t{256} << 10;

// Where every rank stands: each host's ranks (sorted world ranks), hosts in the order of their
// lowest ranks, which is also their order in the cross-host group.
struct Hosts {
  std::vector<std::vector<int>> ranks;
  std::vector<int> host_of;  // by world rank: an index into ranks

  int leader(int host) const { return ranks[host].front(); }
  std::vector<int> leaders() const {
    std::vector<int> out;
    for (const auto& host : ranks) out.push_back(host.front());
    return out;
  }
  // `rank`'s position among its host's ranks.
  int local(int rank) const {
    const auto& mine = ranks[host_of[rank]];
    return static_cast<int>(std::find(mine.begin(), mine.end(), rank) - mine.begin());
  }
};

Hosts group_hosts(const std::vector<std::string>& names) {
  Hosts out;
  out.host_of.resize(names.size());
  for (int r = 0; r < static_cast<int>(names.size()); ++r) {
    auto first = std::find(names.begin(), names.begin() + r, names[r]) - names.begin();
    if (first == r) {
      out.host_of[r] = static_cast<int>(out.ranks.size());
      out.ranks.emplace_back();
    } else {
      out.host_of[r] = out.host_of[first];
    }
    out.ranks[out.host_of[r]].push_back(r);
  }
  return out;
}

class HierarchicalBackend final : public Backend {
 public:
  HierarchicalBackend(std::unique_ptr<Backend> world, Hosts hosts, std::unique_ptr<ShmGroup> host,
                      std::unique_ptr<Backend> cross)
      : world_(std::move(world)),
        hosts_(std::move(hosts)),
        host_(std::move(host)),
        cross_(std::move(cross)) {}

  std::string_view name() const override { return "hierarchical"; }
  int rank() const override { return world_->rank(); }
  int size() const override { return world_->size(); }

  void allreduce(void* buffer, size_t count, DataType dtype, ReduceOp op,
                 const BufferBinding& binding) override {
    check_reduce_op("hierarchical allreduce", op);
    if (count == 0) return;
    if (host_) shm::allreduce(*host_, buffer, count, dtype, op);
    if (cross_)
      cross_->allreduce(buffer, count, dtype, op, {binding.key + "/cross", binding.rebind});
    if (host_) shm::broadcast(*host_, buffer, count * element_size(dtype), 0);
  }

  // Within the root's host, across hosts from its lowest rank, then within every other host.
  void broadcast(void* buffer, size_t bytes, int root) override {
    int root_host = hosts_.host_of[root];
    bool root_here = root_host == hosts_.host_of[rank()];
    if (root_here && host_) shm::broadcast(*host_, buffer, bytes, hosts_.local(root));
    if (cross_) cross_->broadcast(buffer, bytes, root_host);
    if (!root_here && host_) shm::broadcast(*host_, buffer, bytes, 0);
  }

  // Each host gathers its ranks' blocks, the hosts' lowest ranks trade their hosts' blocks, and
  // each hands the whole to its host. That pays only while the result is small: it copies the
  // whole result twice more than Gloo's ring and leaves all but one rank per host idle meanwhile.
  void allgatherv(const void* input, void* output, std::span<const size_t> counts) override {
    std::vector<size_t> offsets(counts.size() + 1, 0);
    for (size_t r = 0; r < counts.size(); ++r) offsets[r + 1] = offsets[r] + counts[r];
    if (offsets.back() > kHierarchicalAllgatherMaxBytes) {
      world_->allgatherv(input, output, counts);
      return;
    }
    // Every host's blocks, hosts one after the other: what the cross-host allgatherv yields.
    std::vector<size_t> host_bytes(hosts_.ranks.size(), 0);
    for (size_t h = 0; h < hosts_.ranks.size(); ++h) {
      for (int r : hosts_.ranks[h]) host_bytes[h] += counts[r];
    }
    int here = hosts_.host_of[rank()];
    std::vector<std::byte> gathered(offsets.back());
    size_t host_start = 0;
    for (int h = 0; h < here; ++h) host_start += host_bytes[h];
    std::byte* mine = gathered.data() + host_start;
    if (host_) {
      std::vector<size_t> local_counts;
      for (int r : hosts_.ranks[here]) local_counts.push_back(counts[r]);
      shm::allgatherv(*host_, input, mine, local_counts);
    } else {
      shm::copy_bytes(mine, input, counts[rank()]);
    }
    if (cross_) {
      std::vector<std::byte> block(mine, mine + host_bytes[here]);
      cross_->allgatherv(block.data(), gathered.data(), host_bytes);
    }
    if (hosts_.local(rank()) == 0) place_in_rank_order(gathered.data(), output, counts, offsets);
    if (host_) shm::broadcast(*host_, output, offsets.back(), 0);
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
  // Host-major blocks (as allgatherv gathered them) to `output` in rank order.
  void place_in_rank_order(const std::byte* host_major, void* output,
                           std::span<const size_t> counts, const std::vector<size_t>& offsets) {
    auto* out = static_cast<std::byte*>(output);
    for (const auto& host : hosts_.ranks) {
      for (int r : host) {
        shm::copy_bytes(out + offsets[r], host_major, counts[r]);
        host_major += counts[r];
      }
    }
  }

  std::unique_ptr<Backend> world_;
  Hosts hosts_;
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
  Hosts hosts = group_hosts(options.hosts);
  const auto& mine = hosts.ranks[hosts.host_of[rank]];
  ShmRendezvous meet = host_meeting(*world, mine.front());
  std::unique_ptr<Backend> cross;
  auto leaders = hosts.leaders();
  if (mine.front() == rank && leaders.size() > 1)
    cross = world->split(leaders, "hierarchical-cross");
  std::unique_ptr<ShmGroup> host;
  if (mine.size() > 1) host = join_shm_group(meet, mine, hosts.local(rank), options.shm);
  return std::make_unique<HierarchicalBackend>(std::move(world), std::move(hosts), std::move(host),
                                               std::move(cross));
}

}  // namespace cohort::ops
