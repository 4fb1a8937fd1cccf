// The identity element of each reduction, used where a rank takes part in an allreduce without
// data of its own (it has joined): x op identity == x for every x.
#pragma once

#include <cstddef>

#include "cohort/types.h"

namespace cohort::ops {

// Fills `count` elements with the identity of `op` in `dtype`: 0 for sum and average, 1 for
// product, the type's largest value (+inf for floating types) for min and its lowest (-inf) for
// max. For bool, sum and max (OR) have identity false, product and min (AND) true.
void fill_identity(void* buffer, size_t count, DataType dtype, ReduceOp op);

}  // namespace cohort::ops
