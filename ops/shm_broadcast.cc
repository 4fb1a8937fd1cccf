#include <algorithm>

#include "ops/shm_collectives.h"

namespace cohort::ops::shm {

// The root is the only writer, so each step carries a whole bank.
void broadcast(ShmGroup& group, void* buffer, size_t bytes, int root) {
  auto* data = static_cast<std::byte*>(buffer);
  for (size_t done = 0; done < bytes;) {
    auto bank = group.next_bank();
    size_t n = std::min(bank.whole_bytes(), bytes - done);
    if (group.rank() == root) copy_bytes(bank.whole(), data + done, n);
    group.barrier("broadcast");
    if (group.rank() != root) copy_bytes(data + done, bank.whole(), n);
    done += n;
  }
}

}  // namespace cohort::ops::shm
