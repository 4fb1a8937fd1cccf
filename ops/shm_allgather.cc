#include <algorithm>
#include <vector>

#include "ops/shm_collectives.h"

namespace cohort::ops::shm {

// Step k carries bytes [k * slot, (k + 1) * slot) of every member's block.
void allgatherv(ShmGroup& group, const void* input, void* output, std::span<const size_t> counts) {
  std::vector<size_t> offsets(counts.size(), 0);
  for (size_t m = 1; m < counts.size(); ++m) offsets[m] = offsets[m - 1] + counts[m - 1];
  size_t longest = *std::max_element(counts.begin(), counts.end());
  size_t slot = group.slot_bytes();
  auto* in = static_cast<const std::byte*>(input);
  auto* out = static_cast<std::byte*>(output);
  auto piece = [&](int member, size_t at) {
    return std::min(slot, counts[member] - std::min(at, counts[member]));
  };
  for (size_t at = 0; at < longest; at += slot) {
    auto bank = group.next_bank();
    int me = group.rank();
    copy_bytes(bank.slot(me), in + std::min(at, counts[me]), piece(me, at));
    group.barrier("allgather");
    for (int member = 0; member < group.size(); ++member) {
      copy_bytes(out + offsets[member] + at, bank.slot(member), piece(member, at));
    }
  }
}

}  // namespace cohort::ops::shm
