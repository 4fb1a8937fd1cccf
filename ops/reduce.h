// CPU reduction and scaling kernels for every element type. Each call dispatches on the type
// once and then runs a plain loop the compiler vectorizes. float16 and bfloat16 are computed in
// float32. Integer sum and product wrap around on overflow (two's complement); bool is logical
// (sum and max are OR, product and min are AND).
#pragma once

#include <cstddef>

#include "cohort/types.h"

namespace cohort::ops {

// dst[i] = dst[i] op src[i]. `op` is kSum, kMin, kMax or kProduct; kAverage throws
// InvalidArgument (it is a sum followed by a scale).
void reduce_into(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op);

// buffer[i] *= factor. Floating types multiply in their own precision (float for 16-bit types);
// integers multiply in double, round to nearest and saturate to the type's range; bool throws.
void scale(void* buffer, size_t count, DataType dtype, double factor);

}  // namespace cohort::ops
