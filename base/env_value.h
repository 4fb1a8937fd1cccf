// The values of environment variables, parsed once for everyone who reads them: the runtime's
// Config and the launcher, which checks its workers' timeouts before it starts them. Every error
// names the variable, the value and what is allowed, so both sides refuse the same text alike.
#pragma once

#include <chrono>
#include <string>

namespace cohort::env {

// Throws InvalidArgument: "NAME='VALUE' is invalid: WHY".
[[noreturn]] void invalid(const char* name, const std::string& value, const std::string& why);

// A whole number from `lo` to `hi` (negative too where `lo` is), spelt as base/decimal.h says:
// "NAME='007' is invalid: expected a whole number from 0 to 9 (no leading zeros: write 7)".
long long parse_integer(const char* name, const std::string& value, long long lo, long long hi);

// How a duration is written and held: a decimal number of `unit`s (fractions and exponents
// allowed), of which `per_unit` microseconds make one; `resolution` microseconds are the shortest
// time the setting holds. A shorter value would be cut to 0, which means "at once" or "never"
// rather than what was asked, so it is refused. 0 itself is accepted only where it has a meaning
// of its own (`zero_allowed`).
struct DurationRule {
  const char* unit;
  double per_unit;
  double resolution;
  bool zero_allowed;
};

// Seconds held in whole milliseconds, and the same where 0 means off or never.
inline constexpr DurationRule kSecondsInMilliseconds{"seconds", 1e6, 1e3, false};
inline constexpr DurationRule kSecondsInMillisecondsOrZero{"seconds", 1e6, 1e3, true};
// Seconds held in whole microseconds.
inline constexpr DurationRule kSecondsInMicroseconds{"seconds", 1e6, 1, false};
// Milliseconds held in whole microseconds, 0 allowed.
inline constexpr DurationRule kMillisecondsInMicrosecondsOrZero{"milliseconds", 1e3, 1, true};
// Microseconds, 0 allowed.
inline constexpr DurationRule kMicrosecondsOrZero{"microseconds", 1, 1, true};

// At most 10^13 microseconds (about 115 days); never nan or inf. The result is cut to whole
// microseconds; cut it to the rule's resolution with duration_cast.
std::chrono::microseconds parse_duration(const char* name, const std::string& value,
                                         const DurationRule& rule);

// `d` as a number of the rule's units, as parse_duration reads it back: "30", "0.25".
std::string duration_text(std::chrono::microseconds d, const DurationRule& rule);

}  // namespace cohort::env
