#include "base/decimal.h"

namespace cohort::decimal_detail {
namespace {

bool digit(char c) {
  return c >= '0' && c <= '9';  // never the locale's: isdigit may take more
}

bool space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace

bool well_formed(std::string_view text, bool negative_allowed) {
  bool negative = !text.empty() && text.front() == '-';
  if (negative && !negative_allowed) return false;
  std::string_view digits = text.substr(negative ? 1 : 0);
  if (digits.empty()) return false;
  for (char c : digits) {
    if (!digit(c)) return false;
  }
  if (digits.size() > 1 && digits.front() == '0') return false;  // "007"
  return !(negative && digits == "0");                           // "-0"
}

std::optional<Respelt> respelt(std::string_view text) {
  Respelt fixed;
  auto found = [&](const char* what) {
    if (fixed.what.empty()) fixed.what = what;
  };
  while (!text.empty() && space(text.front())) {
    text.remove_prefix(1);
    found("spaces");
  }
  while (!text.empty() && space(text.back())) {
    text.remove_suffix(1);
    found("spaces");
  }
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    if (!negative) found("a '+' sign");
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    if (!digit(c)) return std::nullopt;
  }
  while (text.size() > 1 && text.front() == '0') {
    text.remove_prefix(1);
    found("leading zeros");
  }
  if (negative && text == "0") {
    found("a sign");
    negative = false;
  }
  if (fixed.what.empty()) return std::nullopt;  // spelt right: out of bounds, if anything
  fixed.text = (negative ? "-" : "") + std::string(text);
  return fixed;
}

}  // namespace cohort::decimal_detail
