#include "core/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>

#include "cohort/errors.h"

namespace cohort::log {
namespace {

// Logging configuration is process-wide by nature (stderr is); it holds no runtime state.
std::atomic<Level> g_level{Level::kWarning};
std::mutex g_prefix_mutex;
std::string g_prefix;

const char* level_name(Level lvl) {
  switch (lvl) {
    case Level::kTrace:
      return "TRACE";
    case Level::kDebug:
      return "DEBUG";
    case Level::kInfo:
      return "INFO";
    case Level::kWarning:
      return "WARNING";
    case Level::kError:
      return "ERROR";
  }
  return "?";
}

}  // namespace

Level parse_level(std::string_view text) {
  if (text == "trace") return Level::kTrace;
  if (text == "debug") return Level::kDebug;
  if (text == "info") return Level::kInfo;
  if (text == "warning") return Level::kWarning;
  if (text == "error") return Level::kError;
  throw InvalidArgument("log level '" + std::string(text) +
                        "' is not one of trace, debug, info, warning, error");
}

void set_level(Level lvl) {
  g_level = lvl;
}
Level level() {
  return g_level;
}

void set_prefix(std::string prefix) {
  std::lock_guard lock(g_prefix_mutex);
  g_prefix = std::move(prefix);
}

void write(Level lvl, std::string_view message) {
  std::string line;
  {
    std::lock_guard lock(g_prefix_mutex);
    line = g_prefix.empty() ? "" : g_prefix + " ";
  }
  line += "cohort ";
  line += level_name(lvl);
  line += ": ";
  line += message;
  line += '\n';
  // One write(2) per line: atomic with respect to other writers of the same pipe.
  [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace cohort::log
