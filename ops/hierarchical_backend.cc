#include "ops/hierarchical_backend.h"

#include <algorithm>
#include <span>
#include <vector>

#include "cohort/errors.h"
#include "ops/backend_args.h"
#include "ops/shm_collectives.h"

namespace cohort::ops {
namespace {

// Up to this many bytes of result, allgather is hierarchical. Measured on 2 loopback "hosts" of 2
// ranks (docs/benchmarks.md): 2.1 times as fast at 128 KiB, 1.3 times slower at 512 KiB.
constexpr size_t kHierarchicalAllgatherMaxBytes = size_t{256} << 10;
// Up to this many bytes of input, reducescatter is hierarchical. Measured there: 2.3 times as fast
// at 512 KiB, 1.3 times at 2 MiB, 1.5 times slower at 8 MiB.
constexpr size_t kHierarchicalReduceScatterMaxBytes = size_t{2} << 20;

// Where every rank stands: each host's ranks (sorted world ranks), hosts in the order of their
// lowest ranks, which is also their order in the cross-host group.
struct Hosts {
  std::vector<std::vector<int>> ranks;
  std::vector<int> host_of;  // by world rank: an index into ranks

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

// A per-rank layout (allgather's bytes, reducescatter's elements) in two orders: rank by rank, as
// the caller has it, and host by host, as the collectives among the hosts' lowest ranks see it.
class Layout {
 public:
  Layout(const Hosts& hosts, std::span<const size_t> counts) : host_of_(hosts.host_of) {
    by_rank_.assign(counts.size() + 1, 0);
    for (size_t r = 0; r < counts.size(); ++r) by_rank_[r + 1] = by_rank_[r] + counts[r];
    by_host_.resize(counts.size());
    for (const auto& host : hosts.ranks) {
      host_start_.push_back(host_start_.empty() ? 0 : host_start_.back() + host_counts_.back());
      host_counts_.push_back(0);
      for (int r : host) {
        by_host_[r] = host_start_.back() + host_counts_.back();
        host_counts_.back() += counts[r];
      }
    }
  }

  size_t total() const { return by_rank_.back(); }
  // Each host's share of the total, hosts in order.
  const std::vector<size_t>& host_counts() const { return host_counts_; }
  size_t host_start(int host) const { return host_start_[host]; }
  // Where `rank`'s block starts among its host's blocks.
  size_t offset_in_host(int rank) const { return by_host_[rank] - host_start_[host_of_[rank]]; }

  // Units [first, first + n) of the rank-by-rank layout, at `values`, to their places in
  // `by_host` (units of `unit` bytes).
  void to_host_order(size_t first, size_t n, const std::byte* values, std::byte* by_host,
                     size_t unit) const {
    for (size_t r = 0; r < by_host_.size(); ++r) {
      size_t lo = std::max(first, by_rank_[r]), hi = std::min(first + n, by_rank_[r + 1]);
      if (lo >= hi) continue;
      shm::copy_bytes(by_host + (by_host_[r] + lo - by_rank_[r]) * unit,
                      values + (lo - first) * unit, (hi - lo) * unit);
    }
  }
  // The whole host-by-host layout back to rank by rank.
  void to_rank_order(const std::byte* by_host, std::byte* by_rank, size_t unit) const {
    for (size_t r = 0; r < by_host_.size(); ++r) {
      shm::copy_bytes(by_rank + by_rank_[r] * unit, by_host + by_host_[r] * unit,
                      (by_rank_[r + 1] - by_rank_[r]) * unit);
    }
  }

 private:
  std::vector<int> host_of_;
  std::vector<size_t> by_rank_;  // where each rank's block starts rank by rank; then the end
  std::vector<size_t> by_host_;  // where each rank's block starts host by host
  std::vector<size_t> host_start_, host_counts_;
};

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
    check_root("hierarchical broadcast", root, size());
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
    check_rank_counts("hierarchical allgather", counts, size());
    Layout layout(hosts_, counts);
    if (layout.total() > kHierarchicalAllgatherMaxBytes) {
      world_->allgatherv(input, output, counts);
      return;
    }
    int here = hosts_.host_of[rank()];
    std::vector<std::byte> by_host(layout.total());
    std::byte* mine = by_host.data() + layout.host_start(here);
    if (host_) {
      std::vector<size_t> local_counts;
      for (int r : hosts_.ranks[here]) local_counts.push_back(counts[r]);
      shm::allgatherv(*host_, input, mine, local_counts);
    } else {
      shm::copy_bytes(mine, input, counts[rank()]);
    }
    if (cross_) {
      std::vector<std::byte> block(mine, mine + layout.host_counts()[here]);
      cross_->allgatherv(block.data(), by_host.data(), layout.host_counts());
    }
    auto* out = static_cast<std::byte*>(output);
    if (hosts_.local(rank()) == 0) layout.to_rank_order(by_host.data(), out, 1);
    if (host_) shm::broadcast(*host_, output, layout.total(), 0);
  }

  void barrier() override { world_->barrier(); }
  void alltoallv(const void* input, std::span<const size_t> send_counts, void* output,
                 std::span<const size_t> recv_counts) override {
    world_->alltoallv(input, send_counts, output, recv_counts);
  }
  // Reduces within each host, reduce-scatters across hosts among the lowest ranks (each taking
  // its host's blocks), then hands every rank its block within its host. Like allgather, it pays
  // only up to a size: the lowest rank handles its host's whole input while the others wait.
  void reduce_scatter(const void* input, void* output, std::span<const size_t> counts,
                      DataType dtype, ReduceOp op) override {
    check_reduce_scatter("hierarchical reduce_scatter", input, output, counts, dtype, op, rank(),
                         size());
    size_t element = element_size(dtype);
    Layout layout(hosts_, counts);
    if (layout.total() * element > kHierarchicalReduceScatterMaxBytes) {
      world_->reduce_scatter(input, output, counts, dtype, op);
      return;
    }
    bool leader = hosts_.local(rank()) == 0;
    // The lowest rank's host-wide reduction, host by host.
    std::vector<std::byte> by_host(leader ? layout.total() * element : 0);
    auto take = [&](size_t first, size_t n, const std::byte* values) {
      if (leader) layout.to_host_order(first, n, values, by_host.data(), element);
    };
    if (host_) {
      shm::reduce(*host_, "reduce_scatter", input, layout.total(), dtype, op, take);
    } else {
      take(0, layout.total(), static_cast<const std::byte*>(input));
    }
    int here = hosts_.host_of[rank()];
    std::vector<std::byte> host_blocks(layout.host_counts()[here] * element);
    if (cross_) {
      cross_->reduce_scatter(by_host.data(), host_blocks.data(), layout.host_counts(), dtype, op);
    } else if (leader) {
      shm::copy_bytes(host_blocks.data(), by_host.data(), host_blocks.size());
    }
    if (host_) shm::broadcast(*host_, host_blocks.data(), host_blocks.size(), 0);
    shm::copy_bytes(output, host_blocks.data() + layout.offset_in_host(rank()) * element,
                    counts[rank()] * element);
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
