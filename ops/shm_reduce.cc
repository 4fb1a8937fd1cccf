#include <algorithm>
#include <utility>

#include "ops/reduce.h"
#include "ops/shm_collectives.h"

namespace cohort::ops::shm {
namespace {

// This member's share [begin, end) of a step's `count` elements: equal parts, each starting on
// its own cache line so that no two members write the same line.
std::pair<size_t, size_t> share(size_t count, size_t element, int member, int members) {
  size_t per_line = std::max<size_t>(1, 64 / element);
  size_t each = (count + members - 1) / members;
  each = (each + per_line - 1) / per_line * per_line;
  size_t begin = std::min(count, member * each);
  return {begin, std::min(count, begin + each)};
}

}  // namespace

void reduce(ShmGroup& group, std::string_view what, const void* input, size_t count, DataType dtype,
            ReduceOp op, const TakeReduced& take) {
  size_t element = element_size(dtype);
  size_t per_step = group.slot_bytes() / element;
  auto* in = static_cast<const std::byte*>(input);
  for (size_t first = 0; first < count; first += per_step) {
    size_t n = std::min(per_step, count - first);
    auto bank = group.next_bank();
    copy_bytes(bank.slot(group.rank()), in + first * element, n * element);
    group.barrier(what);
    auto [begin, end] = share(n, element, group.rank(), group.size());
    if (begin < end) {
      std::byte* out = bank.result() + begin * element;
      copy_bytes(out, bank.slot(0) + begin * element, (end - begin) * element);
      for (int member = 1; member < group.size(); ++member) {
        reduce_into(out, bank.slot(member) + begin * element, end - begin, dtype, op);
      }
    }
    group.barrier(what);
    take(first, n, bank.result());
  }
}

// Like reduce(), but in place, and copying less: a member puts into its slot only the parts the
// others reduce, reduces its own share where it lies in its buffer (from the others' slots), and
// publishes that share for them. Per step it moves about a third fewer bytes than reduce()
// followed by a copy of the whole result.
void allreduce(ShmGroup& group, void* buffer, size_t count, DataType dtype, ReduceOp op) {
  size_t element = element_size(dtype);
  size_t per_step = group.slot_bytes() / element;
  auto* data = static_cast<std::byte*>(buffer);
  for (size_t first = 0; first < count; first += per_step) {
    size_t n = std::min(per_step, count - first);
    std::byte* step = data + first * element;
    auto bank = group.next_bank();
    auto [begin, end] = share(n, element, group.rank(), group.size());
    std::byte* slot = bank.slot(group.rank());
    copy_bytes(slot, step, begin * element);
    copy_bytes(slot + end * element, step + end * element, (n - end) * element);
    group.barrier("allreduce");
    std::byte* mine = step + begin * element;
    for (int member = 0; member < group.size(); ++member) {
      if (member == group.rank() || begin == end) continue;
      reduce_into(mine, bank.slot(member) + begin * element, end - begin, dtype, op);
    }
    copy_bytes(bank.result() + begin * element, mine, (end - begin) * element);
    group.barrier("allreduce");
    copy_bytes(step, bank.result(), begin * element);
    copy_bytes(step + end * element, bank.result() + end * element, (n - end) * element);
  }
}

}  // namespace cohort::ops::shm
