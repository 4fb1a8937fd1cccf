#include "base/env_value.h"

#include <cstdio>
#include <cstdlib>

#include "base/decimal.h"
#include "cohort/errors.h"

namespace cohort::env {
namespace {

// The shortest of %g's texts that reads back as `v`.
std::string number_text(double v) {
  char text[32];
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, v);
    if (std::strtod(text, nullptr) == v) break;
  }
  return text;
}

}  // namespace

void invalid(const char* name, const std::string& value, const std::string& why) {
  throw InvalidArgument(std::string(name) + "='" + value + "' is invalid: " + why);
}

long long parse_integer(const char* name, const std::string& value, long long lo, long long hi) {
  if (auto v = parse_decimal<long long>(value, lo, hi)) return *v;
  std::string hint = decimal_hint(value, lo, hi);
  invalid(name, value,
          "expected " + decimal_range(lo, hi) + (hint.empty() ? "" : " (" + hint + ")"));
}

std::chrono::microseconds parse_duration(const char* name, const std::string& value,
                                         const DurationRule& rule) {
  const std::string unit = rule.unit;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    invalid(name, value, "expected a number of " + unit);
  }
  if (used != value.size() || !(v > 0 || (rule.zero_allowed && v == 0))) {
    invalid(name, value,
            std::string("expected a ") + (rule.zero_allowed ? "non-negative" : "positive") +
                " number of " + unit);
  }
  constexpr double kLongest = 1e13;        // microseconds: about 115 days
  if (!(v * rule.per_unit <= kLongest)) {  // also infinity
    invalid(name, value, "longer than " + number_text(kLongest / rule.per_unit) + " " + unit);
  }
  if (v > 0 && v * rule.per_unit < rule.resolution) {
    invalid(name, value,
            "shorter than " + number_text(rule.resolution / rule.per_unit) + " " + unit +
                ", the shortest time it can hold" + (rule.zero_allowed ? " (0 means off)" : ""));
  }
  return std::chrono::microseconds(static_cast<long long>(v * rule.per_unit));
}

std::string duration_text(std::chrono::microseconds d, const DurationRule& rule) {
  return number_text(static_cast<double>(d.count()) / rule.per_unit);
}

}  // namespace cohort::env
