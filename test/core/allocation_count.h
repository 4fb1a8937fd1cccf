// For the tests that count what one thread allocates (core.send_alloc, core.cycle_alloc): the
// hook of allocation_hook.h defined as a per-thread counter. Set `counting` around the code
// measured and read `allocations`. Include it in exactly one file of a test binary, instead of
// allocation_hook.h.
#pragma once

#include <cstddef>

#include "allocation_hook.h"

namespace cohort_test_allocation {
inline thread_local bool counting = false;
inline thread_local size_t allocations = 0;
}  // namespace cohort_test_allocation

void on_allocation(size_t) {
  if (cohort_test_allocation::counting) ++cohort_test_allocation::allocations;
}
