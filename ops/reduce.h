// CPU reduction and scaling kernels for every element type. Each call dispatches on the type
// once and then runs a plain loop the compiler vectorizes. float16 and bfloat16 are computed in
// float32. Integer sum and product wrap around on overflow (two's complement); bool is logical
// (sum and max are OR, product and min are AND).
#pragma once

#include <cstddef>

#include "cohort/types.h"

namespace cohort::ops {

// dst[i] = dst[i] op src[i]. `op` is kSum, kMin, kMax or kProduct; kAverage throws
// InvalidArgument (it is a sum followed by a scale). dst and src must not overlap (the loops are
// written over restrict pointers). Bool inputs must be 0 or 1. Min and max follow std::min and
// std::max: a NaN in dst is kept, a NaN in src is dropped.
void reduce_into(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op);

// buffer[i] *= factor. Floating types multiply in their own precision (float for 16-bit types);
// integers multiply in double, truncate toward zero (as Horovod) and saturate to the type's range;
// bool throws InvalidArgument.
void scale(void* buffer, size_t count, DataType dtype, double factor);

}  // namespace cohort::ops
