// Durations as the launcher prints them in its messages: "600 s", "0.25 s".
#pragma once

#include <chrono>
#include <string>

namespace cohort::discovery {

inline std::string seconds_text(std::chrono::microseconds d) {
  std::string text = std::to_string(static_cast<double>(d.count()) / 1e6);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text + " s";
}

}  // namespace cohort::discovery
