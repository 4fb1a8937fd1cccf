// The element types a State's buffers may hold: plain vectors and spans (state.h) and sharded
// buffers (sharded.h).
#pragma once

#include <concepts>
#include <cstdint>

#include "cohort/types.h"

namespace cohort::elastic::detail {

// Element types a tracked buffer may hold (bool only through a span: std::vector<bool> is packed).
template <typename T>
concept BufferElement =
    std::same_as<T, uint8_t> || std::same_as<T, int8_t> || std::same_as<T, int32_t> ||
    std::same_as<T, int64_t> || std::same_as<T, float16> || std::same_as<T, bfloat16> ||
    std::same_as<T, float> || std::same_as<T, double> || std::same_as<T, bool>;

}  // namespace cohort::elastic::detail
