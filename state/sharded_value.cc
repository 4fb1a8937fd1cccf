#include "state/sharded_value.h"

#include <cstring>
#include <thread>

#include "cohort/cohort.h"
#include "cohort/errors.h"
#include "state/shard_layout.h"

namespace cohort::elastic::detail {
namespace {

Tensor bytes_tensor(std::span<std::byte> bytes) {
  return Tensor{bytes.data(), DataType::kUInt8, {static_cast<int64_t>(bytes.size())}};
}

// Frees `old` (replicas as large as a rank's range) on a detached thread of its own, so that the
// free stays off the commit's critical path. Detached: a worker may leave with exit() (a drain)
// without destroying its State, and what the thread frees is this thread's memory alone.
template <typename T>
void release_in_background(T old) {
  std::thread([old = std::move(old)]() mutable { old = T{}; }).detach();
}

bool contains(ShardRange outer, ShardRange inner) {
  return outer.begin <= inner.begin && inner.end <= outer.end;
}

}  // namespace

ShardedValue::ShardedValue(std::string name, ShardStorage& storage)
    : name_(std::move(name)), storage_(&storage) {}

ShardedValue::~ShardedValue() {
  if (!in_flight_) return;
  // Only the wait: the storage may be gone already (a program may destroy it before the State).
  try {
    in_flight_->handle.wait();
  } catch (const Error&) {  // the transfer failed or the runtime shut down: nothing to keep
  }
}

std::span<const std::byte> ShardedValue::Copies::bytes() const {
  if (!transfer) return {};
  return transfer->output().bytes;
}

void ShardedValue::take_own_copy(uint64_t epoch) {
  settle(/*quiet=*/false);  // one transfer at a time: the one before must have arrived
  std::swap(own_, previous_own_);
  std::span<std::byte> bytes = live();
  own_.bytes.resize(bytes.size());
  if (!bytes.empty()) std::memcpy(own_.bytes.data(), bytes.data(), bytes.size());
  own_ = OwnCopy{true, epoch, range(), std::move(own_.bytes)};
  pending_ = Copies{epoch, false, std::nullopt, {}};
}

void ShardedValue::start_replicas(const std::string& collective, const ShardWorld& world) {
  if (world.replicas == 0) {
    pending_.complete = true;
    return;
  }
  auto flight = std::make_unique<InFlight>();
  flight->size = world.size;
  flight->owners = replicas_kept_by(world.rank, world.hosts, world.replicas);
  std::vector<int> holders = replica_holders(world.rank, world.hosts, world.replicas);
  std::vector<int64_t> splits(static_cast<size_t>(world.size), 0);
  for (int h : holders) splits[static_cast<size_t>(h)] = static_cast<int64_t>(own_.bytes.size());
  // One replica goes straight from the own copy; more need it once per holder, in rank order.
  std::span<std::byte> input = own_.bytes;
  if (holders.size() > 1) {
    for (size_t h = 0; h < splits.size(); ++h) {
      if (splits[h] > 0)
        flight->repeated.insert(flight->repeated.end(), input.begin(), input.end());
    }
    input = flight->repeated;
  }
  flight->handle = cohort::alltoall_async(collective, bytes_tensor(input), splits);
  in_flight_ = std::move(flight);
}

void ShardedValue::settle(bool quiet) {
  if (!in_flight_) return;
  std::unique_ptr<InFlight> done = std::move(in_flight_);
  try {
    done->handle.wait();
    accept(*done);
  } catch (const Error&) {
    pending_ = Copies{};
    if (!quiet) throw;
  }
}

void ShardedValue::accept(const InFlight& done) {
  const std::vector<int64_t>& got = done.handle.received_splits();
  size_t offset = 0;
  for (int owner : done.owners) {
    ShardRange r = shard_range(length(), owner, done.size);
    auto expect = static_cast<int64_t>(r.size() * element());
    if (got[static_cast<size_t>(owner)] != expect) {
      throw MismatchError("sharded value '" + name_ + "': rank " + std::to_string(owner) +
                          " sent " + std::to_string(got[static_cast<size_t>(owner)]) +
                          " bytes of its range, not " + std::to_string(expect));
    }
    pending_.ranges.push_back({r, offset});
    offset += static_cast<size_t>(expect);
  }
  pending_.transfer = done.handle;
  pending_.complete = true;
}

void ShardedValue::confirm(bool keep_spare) {
  if (!pending_.complete) return;
  release_in_background(std::move(committed_));
  committed_ = std::move(pending_);
  pending_ = Copies{};
  previous_own_.valid = false;
  if (!keep_spare) previous_own_.bytes = {};
}

void ShardedValue::restore(uint64_t epoch) {
  for (const OwnCopy* own : {&own_, &previous_own_}) {
    if (!own->valid || own->epoch != epoch) continue;
    if (own->range != range()) return;  // the next sync reshards
    if (!own->bytes.empty()) std::memcpy(live().data(), own->bytes.data(), own->bytes.size());
    return;
  }
}

std::optional<std::pair<ShardRange, std::span<const std::byte>>> ShardedValue::own_copy(
    uint64_t epoch) const {
  for (const OwnCopy* own : {&own_, &previous_own_}) {
    if (own->valid && own->epoch == epoch) {
      return std::pair{own->range, std::span<const std::byte>(own->bytes)};
    }
  }
  return std::nullopt;
}

void ShardedValue::load(ShardRange range, std::span<const std::byte> bytes) {
  storage_->assign(range);
  if (!bytes.empty()) std::memcpy(live().data(), bytes.data(), bytes.size());
}

std::vector<HeldCopy> ShardedValue::held() const {
  std::vector<HeldCopy> out{{kLiveEpoch, range()}};
  for (const OwnCopy* own : {&own_, &previous_own_}) {
    if (own->valid) out.push_back({own->epoch, own->range});
  }
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
  for (const OwnCopy* own : {&own_, &previous_own_}) {
    if (own->valid && own->epoch == epoch && contains(own->range, want))
      return slice(own->bytes, own->range);
  }
  for (const Copies* c : {&committed_, &pending_}) {
    if (!c->complete || c->epoch != epoch) continue;
    for (const auto& [r, offset] : c->ranges) {
      if (!contains(r, want)) continue;
      return slice(c->bytes().subspan(offset, r.size() * element()), r);
    }
  }
  return {};
}

uint64_t ShardedValue::reshard(const std::string& collective, const ReshardPlan& plan,
                               uint64_t epoch, int rank, int size) {
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
  // From a commit's copies, the new range is assembled in place: nothing it reads is live. From
  // the live ranges (the first sync, a checkpoint load), it is assembled aside first.
  std::vector<std::byte> fresh;
  if (epoch == kLiveEpoch) {
    fresh.resize(mine.size() * element());
  } else {
    storage_->assign(mine);
  }
  std::byte* base = epoch == kLiveEpoch ? fresh.data() : live().data();
  std::vector<size_t> read_at(static_cast<size_t>(size), 0);  // per source, into got.output
  for (int from = 1; from < size; ++from) {
    read_at[from] =
        read_at[from - 1] +
        static_cast<size_t>(got.received_splits.empty() ? 0 : got.received_splits[from - 1]);
  }
  for (const Transfer& t : plan.transfers) {
    if (t.to != rank) continue;
    std::byte* into = base + (t.range.begin - mine.begin) * element();
    size_t n = t.range.size() * element();
    if (t.from == rank) {
      std::memcpy(into, source(t).data(), n);
    } else {
      std::memcpy(into, got.output.bytes.data() + read_at[t.from], n);
      read_at[t.from] += n;
    }
  }
  if (epoch == kLiveEpoch) {
    storage_->assign(mine);
    if (!fresh.empty()) std::memcpy(live().data(), fresh.data(), fresh.size());
  }
  return got.output.bytes.size();
}

}  // namespace cohort::elastic::detail
