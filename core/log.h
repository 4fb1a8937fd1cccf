// Leveled logging to stderr, one whole line per write so lines from threads never interleave.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace cohort::log {

enum class Level { kTrace, kDebug, kInfo, kWarning, kError };

// Parses "trace", "debug", "info", "warning" or "error"; throws InvalidArgument otherwise.
Level parse_level(std::string_view text);
void set_level(Level level);
Level level();
// Text put before every line, e.g. "[cohortrun]" or "rank 3".
void set_prefix(std::string prefix);

void write(Level level, std::string_view message);

template <typename... Args>
void at(Level lvl, const Args&... args) {
  if (lvl < level()) return;
  std::ostringstream out;
  (out << ... << args);
  write(lvl, out.str());
}
template <typename... Args>
void debug(const Args&... args) {
  at(Level::kDebug, args...);
}
template <typename... Args>
void info(const Args&... args) {
  at(Level::kInfo, args...);
}
template <typename... Args>
void warning(const Args&... args) {
  at(Level::kWarning, args...);
}
template <typename... Args>
void error(const Args&... args) {
  at(Level::kError, args...);
}

}  // namespace cohort::log
