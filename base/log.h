// Leveled logging to stderr, one whole line per write so lines from threads never interleave.
#pragma once

#include <chrono>
#include <cstdint>
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

// Rate limiting for lines that a peer can cause at will (rejected connections, refused requests):
// at most one line per `key` every repeat window (10 s). The first line of a window is written;
// the others are only counted, and the first line written after the window ends carries the count:
// "... (repeated 512 more times in the last 10.0 s)". Keys are call-site constants, one per
// class of line, never per peer or per key of a store: whoever causes the lines must not pick
// how many get written.
void set_repeat_window(std::chrono::milliseconds window);  // for tests
// Whether a line for `key` may be written now; if so, `note` gets the suffix that tells how many
// were held back since the last line written for it ("" for none). `burst` lines per window are
// written before the rest are only counted (a few distinct examples say more than one).
bool admit(std::string_view key, std::string& note, int burst = 1);

template <typename... Args>
void at(Level lvl, const Args&... args) {
  if (lvl < level()) return;
  std::ostringstream out;
  (out << ... << args);
  write(lvl, out.str());
}
// Like at(), rate-limited per `key` (see admit()), `burst` lines per window.
template <typename... Args>
void limited_burst(Level lvl, std::string_view key, int burst, const Args&... args) {
  if (lvl < level()) return;
  std::string note;
  if (!admit(key, note, burst)) return;
  std::ostringstream out;
  (out << ... << args);
  out << note;
  write(lvl, out.str());
}
// Like at(), rate-limited per `key` (see admit()): one line per window.
template <typename... Args>
void limited(Level lvl, std::string_view key, const Args&... args) {
  limited_burst(lvl, key, 1, args...);
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
