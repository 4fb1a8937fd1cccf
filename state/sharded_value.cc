#include "state/sharded_value.h"

#include <cstring>

#include "cohort/cohort.h"
#include "cohort/errors.h"
#include "state/shard_layout.h"

namespace cohort::elastic::detail {
namespace {

Tensor bytes_tensor(std::span<std::byte> bytes) {
  return Tensor{bytes.data(), DataType::kUInt8, {static_cast<int64_t>(bytes.size())}};
}

bool contains(ShardRange outer, ShardRange inner) {
  return outer.begin <= inner.begin && inner.end <= outer.end;
}

}  // namespace

ShardedValue::ShardedValue(std::string name, ShardStorage& storage)
    : name_(std::move(name)), storage_(&storage) {}

void ShardedValue::send_replicas(const std::string& collective, const ShardWorld& world,
                                 uint64_t epoch) {
  pending_ = Copies{epoch, false, {}, {}};
  if (world.replicas > 0) {
    std::vector<int> holders = replica_holders(world.rank, world.hosts, world.replicas);
    std::vector<int64_t> splits(static_cast<size_t>(world.size), 0);
    for (int h : holders) splits[static_cast<size_t>(h)] = static_cast<int64_t>(live().size());
    // One replica goes straight from the live range; more need it once per holder.
    std::vector<std::byte> repeated;
    std::span<std::byte> input = live();
    if (holders.size() > 1) {
      for (int h = 0; h < world.size; ++h) {
        if (splits[static_cast<size_t>(h)] > 0)
          repeated.insert(repeated.end(), input.begin(), input.end());
      }
      input = repeated;
    }
    AlltoallResult got = cohort::alltoall(collective, bytes_tensor(input), splits);
    size_t offset = 0;
    for (int owner : replicas_kept_by(world.rank, world.hosts, world.replicas)) {
      ShardRange r = shard_range(length(), owner, world.size);
      auto expect = static_cast<int64_t>(r.size() * element());
      if (got.received_splits[static_cast<size_t>(owner)] != expect) {
        throw MismatchError("sharded value '" + name_ + "': rank " + std::to_string(owner) +
                            " sent " + std::to_string(got.received_splits[owner]) +
                            " bytes of its range, not " + std::to_string(expect));
      }
      pending_.ranges.push_back({r, offset});
      offset += static_cast<size_t>(expect);
    }
    pending_.bytes = std::move(got.output);
  }
  pending_.complete = true;
}

void ShardedValue::promote() {
  std::span<std::byte> bytes = live();
  own_.resize(bytes.size());
  if (!bytes.empty()) std::memcpy(own_.data(), bytes.data(), bytes.size());
  own_epoch_ = pending_.epoch;
  own_range_ = range();
  has_own_ = true;
  committed_ = std::move(pending_);
  pending_ = Copies{};
}

void ShardedValue::restore() {
  if (!has_own_ || own_range_ != range()) return;  // the next sync reshards
  if (!own_.empty()) std::memcpy(live().data(), own_.data(), own_.size());
}

std::optional<std::pair<ShardRange, std::span<const std::byte>>> ShardedValue::own_copy(
    uint64_t epoch) const {
  if (!has_own_ || own_epoch_ != epoch) return std::nullopt;
  return std::pair{own_range_, std::span<const std::byte>(own_)};
}

void ShardedValue::load(ShardRange range, std::span<const std::byte> bytes) {
  storage_->assign(range);
  if (!bytes.empty()) std::memcpy(live().data(), bytes.data(), bytes.size());
}

std::vector<HeldCopy> ShardedValue::held() const {
  std::vector<HeldCopy> out{{kLiveEpoch, range()}};
  if (has_own_) out.push_back({own_epoch_, own_range_});
  for (const Copies* c : {&committed_, &pending_}) {
    if (!c->complete) continue;
    for (const auto& [r, offset] : c->ranges) out.push_back({c->epoch, r});
  }
  return out;
}

std::span<const std::byte> ShardedValue::find(uint64_t epoch, ShardRange want) const {
  auto slice = [&](std::span<const std::byte> bytes, ShardRange held) {
    return bytes.subspan((want.begin - held.begin) * element(), want.size() * element());
  };
  if (epoch == kLiveEpoch && contains(range(), want)) return slice(live(), range());
  if (has_own_ && own_epoch_ == epoch && contains(own_range_, want)) return slice(own_, own_range_);
  for (const Copies* c : {&committed_, &pending_}) {
    if (!c->complete || c->epoch != epoch) continue;
    for (const auto& [r, offset] : c->ranges) {
      if (!contains(r, want)) continue;
      std::span<const std::byte> all(c->bytes.bytes);
      return slice(all.subspan(offset, r.size() * element()), r);
    }
  }
  return {};
}

uint64_t ShardedValue::reshard(const std::string& collective, const ReshardPlan& plan, uint64_t epoch,
                           int rank, int size) {
  auto source = [&](const Transfer& t) {
    std::span<const std::byte> bytes = find(epoch, t.range);
    if (bytes.size() != t.range.size() * element()) {
      throw InternalError("sharded value '" + name_ + "': this rank was to send elements [" +
                          std::to_string(t.range.begin) + ", " + std::to_string(t.range.end) +
                          ") and does not hold them");
    }
    return bytes;
  };
  bool travels = false;
  std::vector<std::byte> send;
  std::vector<int64_t> splits(static_cast<size_t>(size), 0);
  for (const Transfer& t : plan.transfers) {
    if (t.from == t.to) continue;
    travels = true;
    if (t.from != rank) continue;
    std::span<const std::byte> bytes = source(t);
    send.insert(send.end(), bytes.begin(), bytes.end());
    splits[static_cast<size_t>(t.to)] += static_cast<int64_t>(bytes.size());
  }
  AlltoallResult got;
  if (travels) got = cohort::alltoall(collective, bytes_tensor(send), splits);

  ShardRange mine = shard_range(length(), rank, size);
  std::vector<std::byte> fresh(mine.size() * element());
  std::vector<size_t> read_at(static_cast<size_t>(size), 0);  // per source, into got.output
  for (int from = 1; from < size; ++from) {
    read_at[from] =
        read_at[from - 1] +
        static_cast<size_t>(got.received_splits.empty() ? 0 : got.received_splits[from - 1]);
  }
  for (const Transfer& t : plan.transfers) {
    if (t.to != rank) continue;
    std::byte* into = fresh.data() + (t.range.begin - mine.begin) * element();
    size_t n = t.range.size() * element();
    if (t.from == rank) {
      std::memcpy(into, source(t).data(), n);
    } else {
      std::memcpy(into, got.output.bytes.data() + read_at[t.from], n);
      read_at[t.from] += n;
    }
  }
  storage_->assign(mine);
  if (!fresh.empty()) std::memcpy(live().data(), fresh.data(), fresh.size());
  return got.output.bytes.size();
}

}  // namespace cohort::elastic::detail
