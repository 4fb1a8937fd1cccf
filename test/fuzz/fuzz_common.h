// Shared by the libFuzzer harnesses: what counts as the expected outcome for bad input.
//
// Every decoder of bytes from the network or the disk must either decode or refuse with one of
// the project's typed errors (cohort::Error and its subclasses). Anything else escapes to
// libFuzzer and is a finding: another exception, a crash, a sanitizer report, or an allocation
// beyond -malloc_limit_mb.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>

#include "cohort/errors.h"

namespace cohort::fuzz {

// Runs `decode`; a cohort::Error is the decoder refusing its input, which is fine.
template <typename F>
void decode_or_refuse(F&& decode) {
  try {
    decode();
  } catch (const Error&) {
  }
}

// A property that must hold for every input that decodes (round trips): aborting makes libFuzzer
// save the input as a crash.
inline void require(bool holds) {
  if (!holds) std::abort();
}

inline std::span<const std::byte> bytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}

inline std::string_view text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace cohort::fuzz
