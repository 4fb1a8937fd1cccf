#include "launcher/whole_number.h"

#include <charconv>

namespace cohort::discovery {

std::optional<int> whole_number(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

}  // namespace cohort::discovery
