#include "state/shard_plan.h"

#include <algorithm>
#include <limits>

namespace cohort::elastic::detail {
namespace {

constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();

// Of the ranges that contain `at` and pass `take`, the one reaching furthest (then the lowest
// holder); nullptr if none.
template <typename Take>
const HeldRange* best_at(const std::vector<HeldRange>& held, uint64_t at, Take take) {
  const HeldRange* best = nullptr;
  for (const HeldRange& h : held) {
    if (h.range.begin > at || h.range.end <= at || !take(h)) continue;
    if (!best || h.range.end > best->range.end ||
        (h.range.end == best->range.end && h.holder < best->holder)) {
      best = &h;
    }
  }
  return best;
}

// The first element after `at` where a range passing `take` begins (kNone if none does).
template <typename Take>
uint64_t next_begin(const std::vector<HeldRange>& held, uint64_t at, Take take) {
  uint64_t next = kNone;
  for (const HeldRange& h : held) {
    if (h.range.begin > at && take(h)) next = std::min(next, h.range.begin);
  }
  return next;
}

// Fills rank `to`'s range from what it holds itself first, then from the others.
void fill(ReshardPlan& plan, int to, ShardRange want, const std::vector<HeldRange>& held) {
  auto own = [to](const HeldRange& h) { return h.holder == to; };
  auto any = [](const HeldRange&) { return true; };
  uint64_t at = want.begin;
  while (at < want.end) {
    const HeldRange* source = best_at(held, at, own);
    uint64_t end = source ? source->range.end : 0;
    if (!source) {
      source = best_at(held, at, any);
      // Up to where this rank's own copy takes over again.
      end = source ? std::min(source->range.end, next_begin(held, at, own)) : 0;
    }
    if (!source) {
      uint64_t gap_end = std::min(want.end, next_begin(held, at, any));
      if (!plan.missing.empty() && plan.missing.back().end == at) {
        plan.missing.back().end = gap_end;
      } else {
        plan.missing.push_back({at, gap_end});
      }
      at = gap_end;
      continue;
    }
    end = std::min(end, want.end);
    plan.transfers.push_back({source->holder, to, {at, end}});
    at = end;
  }
}

}  // namespace

ReshardPlan plan_reshard(uint64_t length, int size, const std::vector<HeldRange>& held) {
  ReshardPlan plan;
  for (int to = 0; to < size; ++to) fill(plan, to, shard_range(length, to, size), held);
  return plan;
}

}  // namespace cohort::elastic::detail
