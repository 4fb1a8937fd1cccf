// How a sharded value moves into a new world: given which rank holds which elements of the commit
// being restored, the transfers that give every rank its new range. A rank takes what it holds
// itself first, so only the bytes whose holder changed travel. Pure: every rank computes the same
// plan from the same gathered descriptions.
#pragma once

#include <cstdint>
#include <vector>

#include "cohort/elastic/sharded.h"

namespace cohort::elastic::detail {

// Elements [range) of the commit being restored, held by rank `holder` of the new world.
struct HeldRange {
  int holder = 0;
  ShardRange range;
};

// Elements [range) travel from rank `from` to rank `to` (from == to: a copy within the rank).
struct Transfer {
  int from = 0;
  int to = 0;
  ShardRange range;
  bool operator==(const Transfer&) const = default;
};

struct ReshardPlan {
  std::vector<Transfer> transfers;  // by destination, then by element
  std::vector<ShardRange> missing;  // ranges no rank holds, in element order
};

// The plan for `length` elements over `size` ranks.
ReshardPlan plan_reshard(uint64_t length, int size, const std::vector<HeldRange>& held);

}  // namespace cohort::elastic::detail
