// Integers written in decimal text: the one parser of them for the whole project. Flags, COHORT_*
// and the operators' variables, hostfiles, discovery output, rank lists, and the numbers in the
// keys and records of the rendezvous stores all go through it, so that every number has exactly
// one spelling everywhere (docs/environment.md, "Numbers"):
//   decimal digits only; no leading zero except "0" itself; no '+'; a '-' only where the caller
//   allows negative numbers, and never "-0"; no spaces; within the caller's bounds and type.
// "007", "+7", " 7", "7 ", "-0", "0x7", "7.0" and "1e3" are refused; "7", "0" and "-7" (where
// negatives are allowed) are not.
#pragma once

#include <charconv>
#include <concepts>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace cohort {

namespace decimal_detail {
// Whether `text` is spelt as the grammar above says (bounds aside).
bool well_formed(std::string_view text, bool negative_allowed);
// `text` spelt the way the grammar wants (spaces, '+' and leading zeros dropped, "-0" as "0"),
// and what it has that it must not ("leading zeros"); nothing when that does not make a number or
// `text` is spelt right already.
struct Respelt {
  std::string text;
  std::string what;
};
std::optional<Respelt> respelt(std::string_view text);
}  // namespace decimal_detail

// The integer that all of `text` spells, from `lo` to `hi`; nothing when it is spelt otherwise
// or out of bounds.
template <std::integral T>
std::optional<T> parse_decimal(std::string_view text, T lo = std::numeric_limits<T>::min(),
                               T hi = std::numeric_limits<T>::max()) {
  if (!decimal_detail::well_formed(text, std::cmp_less(lo, 0))) return std::nullopt;
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < lo || value > hi) {
    return std::nullopt;
  }
  return value;
}

// A whole number >= 0 that fits an int: the numbers in keys, records and rank lists.
inline std::optional<int> whole_number(std::string_view text) {
  return parse_decimal<int>(text, 0);
}

// What a number from `lo` to `hi` is, for messages: "a whole number from 1 to 4096", or "an
// integer from -60 to 60" where negatives are allowed.
template <std::integral T>
std::string decimal_range(T lo, T hi) {
  return std::string(std::cmp_less(lo, 0) ? "an integer" : "a whole number") + " from " +
         std::to_string(lo) + " to " + std::to_string(hi);
}

// Where `text` is a number from `lo` to `hi` spelt another way ("007", "+7", " 7", "-0"): what
// to write instead, e.g. "write 7, without leading zeros"; else empty. Messages append it to the
// refusal, so that a value that looks right says why it is refused.
template <std::integral T>
std::string decimal_hint(std::string_view text, T lo, T hi) {
  auto fixed = decimal_detail::respelt(text);
  if (!fixed || !parse_decimal<T>(fixed->text, lo, hi)) return "";
  return "write " + fixed->text + ", without " + fixed->what;
}

// "'TEXT' is not a whole number from LO to HI", with the hint in parentheses where there is one:
// the part of a message after the name of the flag or variable.
template <std::integral T>
std::string decimal_refusal(std::string_view text, T lo, T hi) {
  std::string hint = decimal_hint(text, lo, hi);
  return "'" + std::string(text) + "' is not " + decimal_range(lo, hi) +
         (hint.empty() ? "" : " (" + hint + ")");
}

}  // namespace cohort
